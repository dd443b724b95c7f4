-- Expiry (R30): the expiry a job was published with (expires_at, the queue clock) and the one
-- in force (expiry_at: the earlier of it and published_at + the queue's retention; NULL for
-- none), indexed only where set, so jobs of a queue without expiry touch no index for it; and
-- whether the queue ever had a job published with an expiry.
ALTER TABLE leaseq_jobs ADD COLUMN expires_at INTEGER;
ALTER TABLE leaseq_jobs ADD COLUMN expiry_at INTEGER;
ALTER TABLE leaseq_queues ADD COLUMN job_expiry INTEGER NOT NULL DEFAULT 0;
CREATE INDEX leaseq_jobs_expiry ON leaseq_jobs (queue, expiry_at) WHERE expiry_at IS NOT NULL;
