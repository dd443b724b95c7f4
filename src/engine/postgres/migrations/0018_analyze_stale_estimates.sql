-- The plans of leaseq_reserve's statements come from the table's statistics. A jobs table that
-- was never analyzed (a new database whose autovacuum has not run yet, or has it off), or was
-- last measured nearly empty (a VACUUM after a drain: the pages stay, the estimate is a few rows
-- in them, and it stays that low while new jobs fill the same pages), looks like a handful of
-- rows. Without column statistics the planner then takes a queue's jobs through the primary
-- key (queue, id), filtering every job of the queue for the few ready positions it wants:
-- measured at a backlog of 20,000, 22 ms a reserve (19,999 rows filtered out), and a drain at
-- one consumer of 196 jobs/s where it is 764 with this change, in a database whose only VACUUM
-- ran after 5,000 jobs came and went with 20 left behind them. (0017's enable_seqscan = off does
-- not help: it is an index scan.) So when one queue has more than 1000 ready jobs and ten times
-- more than the table is estimated to hold in all, the reserve analyzes the table first (about
-- 80 ms at 20,000 jobs, once: the estimate is then right), and its statements are planned again
-- with the new statistics.
-- One session at a time (a try of an advisory lock; the others go on with the plans they have).
CREATE OR REPLACE FUNCTION leaseq_reserve(p_queue TEXT, p_now BIGINT, p_max BIGINT, p_visibility BIGINT,
  p_follow BOOLEAN, p_block BIGINT)
RETURNS TABLE (fallback BOOLEAN, id TEXT, payload TEXT, delivery_count INTEGER, token BIGINT,
  grp TEXT, deadline BIGINT)
LANGUAGE plpgsql SET enable_seqscan = off AS $fn$
#variable_conflict use_column
DECLARE
  q leaseq_queues%ROWTYPE;
  opts JSONB;
  v_now BIGINT;
  v_count BIGINT;
  v_deadline BIGINT;
  v_taken BIGINT := 0;
  v_redelivered BIGINT := 0;
  v_clock BIGINT;
  v_active BIGINT;
  r RECORD;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT * INTO q FROM leaseq_queues WHERE name = p_queue FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT TRUE, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::text, NULL::bigint;
    RETURN;
  END IF;
  SELECT GREATEST(q.clock, MAX(t.clock)), q.active_count + COALESCE(SUM(t.active), 0)
    INTO v_clock, v_active FROM leaseq_tallies AS t WHERE t.queue = p_queue;
  IF p_now < v_clock AND NOT p_follow THEN
    RETURN QUERY SELECT TRUE, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::text, NULL::bigint;
    RETURN;
  END IF;
  v_now := GREATEST(p_now, v_clock);
  opts := q.options::jsonb;
  IF v_now >= COALESCE(q.next_event_at, v_now + 1) OR COALESCE((opts ->> 'paused')::boolean, FALSE)
     OR (q.ready_bands IS NOT NULL AND q.ready_bands <> '[]') THEN
    RETURN QUERY SELECT TRUE, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::text, NULL::bigint;
    RETURN;
  END IF;
  v_count := LEAST(p_max, q.ready_count,
    COALESCE((opts ->> 'prefetch')::bigint - v_active, p_max));
  v_deadline := v_now + LEAST(COALESCE(p_visibility, (opts ->> 'visibility')::bigint),
    COALESCE((opts ->> 'maxLease')::bigint, COALESCE(p_visibility, (opts ->> 'visibility')::bigint)));
  -- Statistics that say the table holds far fewer jobs than this queue alone has ready are
  -- refreshed first (by one session at a time): plans made from them would filter every job of
  -- the queue.
  IF q.ready_count > 1000 AND q.ready_count > 10 * (SELECT GREATEST(c.reltuples, 0)
       FROM pg_class AS c WHERE c.oid = 'leaseq_jobs'::regclass)
     AND pg_try_advisory_xact_lock(744505, 0) THEN
    ANALYZE leaseq_jobs;
  END IF;
  IF v_count > 0 THEN
    FOR r IN
      UPDATE leaseq_jobs AS j SET state = 'active', token = q.next_token + j.ready_pos - q.ready_head,
        delivered_at = v_now, deadline = v_deadline, session = NULL,
        delivery_count = j.delivery_count + 1, ready_pos = NULL
      WHERE j.queue = p_queue AND j.state = 'ready' AND j.ready_pos >= q.ready_head
        AND j.ready_pos < q.ready_head + v_count
      RETURNING j.id, j.payload, j.delivery_count, j.token, j.grp
    LOOP
      v_taken := v_taken + 1;
      IF r.delivery_count > 1 THEN v_redelivered := v_redelivered + 1; END IF;
      RETURN QUERY SELECT FALSE, r.id, r.payload, r.delivery_count, r.token, r.grp, v_deadline;
    END LOOP;
  END IF;
  UPDATE leaseq_queues SET clock = v_now, next_token = q.next_token + v_taken,
    ready_head = q.ready_head + v_taken, ready_count = q.ready_count - v_taken,
    active_count = q.active_count + v_taken,
    next_event_at = CASE WHEN v_taken > 0 THEN LEAST(COALESCE(q.next_event_at, v_deadline), v_deadline)
      ELSE q.next_event_at END,
    counters = CASE WHEN v_taken > 0 THEN leaseq_add_counters(q.counters,
      jsonb_build_object('deliveries', v_taken, 'redeliveries', v_redelivered), 0) ELSE q.counters END
  WHERE name = p_queue;
  -- A token above the mark is answered only once a raised mark is on disk: this commit waits.
  IF q.next_token + v_taken - 1 > q.token_high_water THEN
    UPDATE leaseq_queues SET token_high_water = q.next_token + v_taken - 1 + p_block WHERE name = p_queue;
    PERFORM set_config('synchronous_commit', 'on', true);
  END IF;
END
$fn$;
