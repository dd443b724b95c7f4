-- Lookups that read every job or id of a queue, each now a range of an index of its own.
--
-- R24: whether a group has a member that is not dead, asked by a publish into a group, a
-- redrive and an arrival from another queue. Through leaseq_jobs_group each entry needed the
-- job's row for its state, which SQLite estimated dearer than the queue's range of the primary
-- key: a group with no member read every job of the queue (100 publishes into new groups took
-- 262 ms at 50,000 jobs, 17 at none). Here the state is in the entry and dead jobs are not.
CREATE INDEX IF NOT EXISTS leaseq_jobs_group_live ON leaseq_jobs (queue, grp, state)
  WHERE grp IS NOT NULL AND state <> 'dead';
--
-- R4: every step that time drives forgets the acked ids whose de-duplication window ended.
-- Through the primary key it read every id the queue remembered (a step of 4.7 ms at 100,000
-- ids, 0.4 at none); by the time each is forgotten, it reads those it deletes.
CREATE INDEX IF NOT EXISTS leaseq_acked_forget ON leaseq_acked (queue, forget_at);
--
-- R16: when each session ends by its ack timeout, read at every step that time drives: from
-- the first delivery of the session that the timeout can trip. A query per session read every
-- job of the queue (a step took 1.2 s with 400 sessions and 20,000 jobs); one range each of
-- this index, which holds the live deliveries of sessions alone, covers them all.
CREATE INDEX IF NOT EXISTS leaseq_jobs_session_delivered
  ON leaseq_jobs (queue, session, delivered_at, deadline)
  WHERE state = 'active' AND session IS NOT NULL;
