-- Queues: options, clock, counters and gauges of each named queue (one row each).
CREATE TABLE leaseq_queues (
  name TEXT PRIMARY KEY,
  options TEXT NOT NULL,
  clock INTEGER NOT NULL,
  next_token INTEGER NOT NULL,
  next_seq INTEGER NOT NULL,
  next_session INTEGER NOT NULL,
  next_generated_id INTEGER NOT NULL,
  ready_head INTEGER NOT NULL,
  ready_tail INTEGER NOT NULL,
  dead_seq INTEGER NOT NULL,
  next_event_at INTEGER,
  ready_count INTEGER NOT NULL,
  delayed_count INTEGER NOT NULL,
  active_count INTEGER NOT NULL,
  dead_count INTEGER NOT NULL,
  session_count INTEGER NOT NULL,
  counters TEXT NOT NULL
);

-- Jobs that still exist, in one of four states; a live delivery lives on its job's row.
CREATE TABLE leaseq_jobs (
  queue TEXT NOT NULL,
  id TEXT NOT NULL,
  payload TEXT,
  seq INTEGER NOT NULL,
  state TEXT NOT NULL,
  delivery_count INTEGER NOT NULL,
  available_at INTEGER NOT NULL,
  ready_pos INTEGER,
  ready_since INTEGER,
  token INTEGER,
  delivered_at INTEGER,
  deadline INTEGER,
  session TEXT,
  dead_reason TEXT,
  dead_at INTEGER,
  dead_seq INTEGER,
  history TEXT,
  PRIMARY KEY (queue, id)
) WITHOUT ROWID;

CREATE INDEX leaseq_jobs_ready ON leaseq_jobs (queue, ready_pos) WHERE state = 'ready';
CREATE INDEX leaseq_jobs_delayed ON leaseq_jobs (queue, available_at, seq) WHERE state = 'delayed';
CREATE UNIQUE INDEX leaseq_jobs_token ON leaseq_jobs (queue, token) WHERE token IS NOT NULL;
CREATE INDEX leaseq_jobs_deadline ON leaseq_jobs (queue, deadline) WHERE state = 'active';
CREATE INDEX leaseq_jobs_session ON leaseq_jobs (queue, session, token) WHERE session IS NOT NULL;
CREATE INDEX leaseq_jobs_dead ON leaseq_jobs (queue, dead_seq) WHERE state = 'dead';

CREATE TABLE leaseq_sessions (
  queue TEXT NOT NULL,
  id TEXT NOT NULL,
  prefetch INTEGER,
  timeout INTEGER,
  ack_timeout INTEGER,
  last_heartbeat INTEGER NOT NULL,
  PRIMARY KEY (queue, id)
) WITHOUT ROWID;

-- Acked ids still refused as duplicates (the de-duplication window).
CREATE TABLE leaseq_acked (
  queue TEXT NOT NULL,
  id TEXT NOT NULL,
  forget_at INTEGER NOT NULL,
  PRIMARY KEY (queue, id)
) WITHOUT ROWID;
