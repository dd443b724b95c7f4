-- Where a job that came by dead-lettering died (R26): its queue, reason and time there.
ALTER TABLE leaseq_jobs ADD COLUMN origin_queue TEXT;
ALTER TABLE leaseq_jobs ADD COLUMN origin_reason TEXT;
ALTER TABLE leaseq_jobs ADD COLUMN origin_at INTEGER;
