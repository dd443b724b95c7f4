-- Message groups (R24): a job's group and where it stands in it (the seq it joined at); jobs
-- waiting behind an earlier member of their group have state 'waiting' and are counted apart.
ALTER TABLE leaseq_jobs ADD COLUMN grp TEXT;
ALTER TABLE leaseq_jobs ADD COLUMN group_seq INTEGER;
ALTER TABLE leaseq_queues ADD COLUMN waiting_count INTEGER NOT NULL DEFAULT 0;
CREATE INDEX leaseq_jobs_group ON leaseq_jobs (queue, grp, group_seq) WHERE grp IS NOT NULL;
