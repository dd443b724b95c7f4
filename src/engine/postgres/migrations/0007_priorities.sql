-- Priorities (R23): each job's priority (0 lowest, the default, to 9), and the ready-position
-- bands of priorities above 0 as JSON (NULL while the queue never used one).
ALTER TABLE leaseq_jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE leaseq_queues ADD COLUMN ready_bands TEXT;
