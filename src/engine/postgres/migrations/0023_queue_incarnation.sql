-- Which making of a queue its row is: one more than the last one deleted under its name, kept
-- with the counters a delete leaves (0004). A redrive, purge or moveJobs that takes steps (R20)
-- ends where a step finds another making of its queue than the first step did: the place it
-- kept in the dead set or in ready belongs to the queue it began on, not to one made again
-- under the name. Queues and deletes from before count from 0.
ALTER TABLE leaseq_queues ADD COLUMN incarnation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE leaseq_counter_floors ADD COLUMN incarnation BIGINT NOT NULL DEFAULT 0;
