-- pruneInbox deletes a consumer's entries processed before a time. The primary key (consumer,
-- job_id) only narrows that to the consumer, so each prune read every entry the consumer kept,
-- however few went. With this index it reads the entries it deletes. One more index entry per
-- processed job. Built once, when a process of this version first opens the database: an inbox
-- of millions of entries takes seconds, during which inbox writes wait.
CREATE INDEX IF NOT EXISTS leaseq_inbox_processed ON leaseq_inbox (consumer, processed_at);
