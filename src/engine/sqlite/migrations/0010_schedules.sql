-- Periodic jobs (R25): what to publish into a queue and when (spec: cron or every, timezone,
-- payload, as JSON), when the schedule was set and the occurrence published last (ms).
CREATE TABLE leaseq_schedules (
  queue TEXT NOT NULL,
  name TEXT NOT NULL,
  spec TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_at INTEGER,
  PRIMARY KEY (queue, name)
);
