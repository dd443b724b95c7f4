-- leaseq_ack's statements on the jobs by token, planned for each call's values as the reserve's
-- were before 0019: for a queue the table's statistics do not know (created, or filled, after
-- the last ANALYZE) the estimate for its name is a row or so, and that plan takes the queue's
-- jobs through the primary key (queue, id), filtering every one of them for the token: at a
-- backlog of 20,000 a drain by one consumer fell from about 900 to 150 jobs/s. One plan for any
-- values goes through the token index (queue, token), as the reserve's go through the ready one.
ALTER FUNCTION leaseq_ack(TEXT, BIGINT, BIGINT[], BOOLEAN)
  SET plan_cache_mode = force_generic_plan;
