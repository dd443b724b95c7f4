-- Whether an id of the generated form (`job-N`) ever came into the queue from a caller or
-- another queue. Until one does, generated ids need no look-up. Existing queues may have had
-- one: they keep looking.
ALTER TABLE leaseq_queues ADD COLUMN generated_form_seen INTEGER NOT NULL DEFAULT 1;
