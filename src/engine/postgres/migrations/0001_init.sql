-- Queues: options, clock, counters and gauges of each named queue (one row each).
CREATE TABLE leaseq_queues (
  name TEXT PRIMARY KEY,
  options TEXT NOT NULL,
  clock BIGINT NOT NULL,
  next_token BIGINT NOT NULL,
  next_seq BIGINT NOT NULL,
  next_session BIGINT NOT NULL,
  next_generated_id BIGINT NOT NULL,
  ready_head BIGINT NOT NULL,
  ready_tail BIGINT NOT NULL,
  dead_seq BIGINT NOT NULL,
  next_event_at BIGINT,
  ready_count BIGINT NOT NULL,
  delayed_count BIGINT NOT NULL,
  active_count BIGINT NOT NULL,
  dead_count BIGINT NOT NULL,
  session_count BIGINT NOT NULL,
  counters TEXT NOT NULL
);

-- Jobs that still exist, in one of four states; a live delivery lives on its job's row.
CREATE TABLE leaseq_jobs (
  queue TEXT NOT NULL,
  id TEXT NOT NULL,
  payload TEXT,
  seq BIGINT NOT NULL,
  state TEXT NOT NULL,
  delivery_count INTEGER NOT NULL,
  available_at BIGINT NOT NULL,
  ready_pos BIGINT,
  ready_since BIGINT,
  token BIGINT,
  delivered_at BIGINT,
  deadline BIGINT,
  session TEXT,
  dead_reason TEXT,
  dead_at BIGINT,
  dead_seq BIGINT,
  history TEXT,
  PRIMARY KEY (queue, id)
);

CREATE INDEX leaseq_jobs_ready ON leaseq_jobs (queue, ready_pos) WHERE state = 'ready';
CREATE INDEX leaseq_jobs_delayed ON leaseq_jobs (queue, available_at, seq) WHERE state = 'delayed';
CREATE UNIQUE INDEX leaseq_jobs_token ON leaseq_jobs (queue, token) WHERE token IS NOT NULL;
CREATE INDEX leaseq_jobs_deadline ON leaseq_jobs (queue, deadline) WHERE state = 'active';
CREATE INDEX leaseq_jobs_session ON leaseq_jobs (queue, session, token) WHERE session IS NOT NULL;
CREATE INDEX leaseq_jobs_dead ON leaseq_jobs (queue, dead_seq) WHERE state = 'dead';

CREATE TABLE leaseq_sessions (
  queue TEXT NOT NULL,
  id TEXT NOT NULL,
  prefetch BIGINT,
  timeout BIGINT,
  ack_timeout BIGINT,
  last_heartbeat BIGINT NOT NULL,
  PRIMARY KEY (queue, id)
);

-- Acked ids still refused as duplicates (the de-duplication window).
CREATE TABLE leaseq_acked (
  queue TEXT NOT NULL,
  id TEXT NOT NULL,
  forget_at BIGINT NOT NULL,
  PRIMARY KEY (queue, id)
);
