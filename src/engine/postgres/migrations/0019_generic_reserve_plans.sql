-- The reserve's update of the jobs is planned for each call's values (a custom plan) for as long
-- as PostgreSQL estimates such a plan cheaper than one for any values (plan_cache_mode = auto).
-- For a queue the table's statistics do not know (created, or filled, after the last ANALYZE)
-- the estimate for its name is a row or so, and that plan takes the queue's jobs through the
-- primary key (queue, id), filtering every one of them for the ready positions it wants: at a
-- backlog of 20,000 a drain by one consumer did 327 jobs/s. Being that cheap by its estimate,
-- it is kept being chosen, and planned again at every call (about a fifth of the database's CPU
-- per reserve where the plan was a good one, measured with perf: standard_planner under
-- GetCachedPlan). One plan for any values goes through the ready index (queue, ready_pos),
-- whose conditions the statement names and which enable_seqscan = off (0017) leaves the
-- planner no cheaper way around; it is made once per connection and kept until the table's
-- statistics change. The same drain: 1,576 jobs/s; one job reserved at a time where the custom
-- plan was a good one: 492 to 386 µs a call.
ALTER FUNCTION leaseq_reserve(TEXT, BIGINT, BIGINT, BIGINT, BOOLEAN, BIGINT)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION leaseq_reserve_next(TEXT, BIGINT, BIGINT, BIGINT, BOOLEAN, BIGINT)
  SET plan_cache_mode = force_generic_plan;
