-- The source's session: fixed settings, so that a cursor value's text (its ::text output) and
-- a timestamp's JSON are the same whatever the server's or role's defaults; read-only.
SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres';
SET extra_float_digits = 1; SET client_encoding = 'UTF8'; SET default_transaction_read_only = on
