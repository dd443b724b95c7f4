-- A PL/pgSQL statement with parameters is planned again at every call for as long as
-- PostgreSQL's estimate of its generic plan stays above the custom plans it made (plan_cache_mode
-- = auto). leaseq_reserve's UPDATE of the jobs is such a statement: the range of ready positions
-- it takes is estimated from the actual values, the generic plan from a default selectivity, so
-- every reserve paid for planning it again (about a fifth of the database's CPU per reserve,
-- measured with perf: standard_planner under GetCachedPlan). Its plan is the same at any
-- parameters: the ready index (queue, ready_pos), whose conditions the statement names, and
-- which enable_seqscan = off (0017) leaves the planner no cheaper way around. A drain by one
-- consumer reserving one job at a time went from 492 to 386 µs a reserve.
-- The plan is kept until the table's statistics change (an ANALYZE, as 0018's, plans it again).
ALTER FUNCTION leaseq_reserve(TEXT, BIGINT, BIGINT, BIGINT, BOOLEAN, BIGINT)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION leaseq_reserve_next(TEXT, BIGINT, BIGINT, BIGINT, BOOLEAN, BIGINT)
  SET plan_cache_mode = force_generic_plan;
