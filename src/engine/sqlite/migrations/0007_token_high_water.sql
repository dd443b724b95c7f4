-- The largest token a queue may hand out before it raises this mark again in a synced commit.
-- Reservations commit without a sync of their own (they may be lost to a power loss), so after
-- a restart that was not a clean close, tokens continue above it: never one handed out before.
ALTER TABLE leaseq_queues ADD COLUMN token_high_water INTEGER NOT NULL DEFAULT 0;
