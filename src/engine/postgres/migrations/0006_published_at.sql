-- When each job was published (the queue clock). Jobs stored before this column existed keep
-- NULL: their publish time was never recorded.
ALTER TABLE leaseq_jobs ADD COLUMN published_at BIGINT;
