-- When each job was processed (ms), so old inbox entries can be pruned.
ALTER TABLE leaseq_inbox ADD COLUMN processed_at INTEGER NOT NULL DEFAULT 0;
