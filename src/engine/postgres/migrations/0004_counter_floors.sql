-- The token and session counters of deleted queues: a queue re-created under the same name
-- continues them, so a token or session id handed out before can never name a new delivery.
CREATE TABLE leaseq_counter_floors (
  name TEXT PRIMARY KEY,
  next_token BIGINT NOT NULL,
  next_session BIGINT NOT NULL
);
