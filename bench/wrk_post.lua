-- wrk's request for the relay's ceiling (bench/relay_bench.sh): a POST with the relay's
-- body and headers, their values taken from a real outbox event signed as the relay signs
-- it. The same bytes every time: the receiver does not look at them.
wrk.method = "POST"
wrk.body = os.getenv("WRK_BODY")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["User-Agent"] = "tidemark-relay"
wrk.headers["webhook-id"] = os.getenv("WRK_ID")
wrk.headers["webhook-timestamp"] = os.getenv("WRK_TIMESTAMP")
wrk.headers["webhook-signature"] = os.getenv("WRK_SIGNATURE")
wrk.headers["Idempotency-Key"] = os.getenv("WRK_ID")
