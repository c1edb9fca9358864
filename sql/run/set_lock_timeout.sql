-- How long this transaction's next lock waits may last, $1 ('2000ms'): set for the
-- transaction only.
SELECT set_config('lock_timeout', $1, true)
