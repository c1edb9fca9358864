-- Whether any pipeline other than the view's feeders ($1, a text array) has stored
-- transactions: then a snapshot of transaction_state is not the view's history, and a rebuild
-- must replay the full history instead.
SELECT EXISTS (SELECT 1 FROM transaction_state WHERE pipeline <> ALL ($1::text[])) AS others_feed
