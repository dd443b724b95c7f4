-- leaseq_ack as in 0027, but an ack that remembers ids for the queue's dedupWindow (R4) brings
-- the queue's next event to the end of that window at the latest, as an ack on the general path
-- does. The step that forgets remembered ids came only when a lease, delay, expiry or session
-- of the queue came due: with a lease of an hour and a window of a second, every id acked
-- through this function stayed in leaseq_acked for up to an hour (a row per job).
CREATE OR REPLACE FUNCTION leaseq_ack(p_queue TEXT, p_now BIGINT, p_tokens BIGINT[], p_follow BOOLEAN)
RETURNS TABLE (fallback BOOLEAN, token BIGINT)
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
DECLARE
  q leaseq_queues%ROWTYPE;
  v_clock BIGINT;
  v_now BIGINT;
  v_window BIGINT;
  v_acked BIGINT := 0;
  v_sum BIGINT := 0;
  v_max BIGINT := 0;
  v_token BIGINT;
  v_grouped BOOLEAN;
  v_room BOOLEAN := FALSE;
  r RECORD;
BEGIN
  PERFORM pg_advisory_xact_lock_shared(744503, hashtext(p_queue));
  SELECT * INTO q FROM leaseq_queues WHERE name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT TRUE, NULL::bigint;
    RETURN;
  END IF;
  SELECT GREATEST(q.clock, MAX(t.clock)) INTO v_clock FROM leaseq_tallies AS t WHERE t.queue = p_queue;
  IF p_now < v_clock AND NOT p_follow THEN
    RETURN QUERY SELECT TRUE, NULL::bigint;
    RETURN;
  END IF;
  v_now := GREATEST(p_now, v_clock);
  IF v_now >= COALESCE(q.next_event_at, v_now + 1) THEN
    RETURN QUERY SELECT TRUE, NULL::bigint;
    RETURN;
  END IF;
  FOREACH v_token IN ARRAY p_tokens LOOP
    SELECT j.grp IS NOT NULL INTO v_grouped FROM leaseq_jobs AS j
    WHERE j.queue = p_queue AND j.token = v_token;
    IF v_grouped THEN
      RETURN QUERY SELECT TRUE, NULL::bigint;
      RETURN;
    END IF;
  END LOOP;
  v_window := COALESCE((q.options::jsonb ->> 'dedupWindow')::bigint, 0);
  FOREACH v_token IN ARRAY p_tokens LOOP
    -- By token alone: a job has a token only while it is active (every end of a delivery
    -- clears it, as the general path's ack relies on). A condition on state would let the
    -- planner take the partial index of active jobs and read every active job of the queue
    -- for each token, which it does when its statistics say the table is empty.
    DELETE FROM leaseq_jobs AS j
    WHERE j.queue = p_queue AND j.token = v_token
    RETURNING j.id, j.token, j.delivered_at, j.group_seq, j.session INTO r;
    CONTINUE WHEN NOT FOUND;
    IF r.session IS NOT NULL AND NOT v_room THEN
      SELECT s.prefetch IS NOT NULL INTO v_room FROM leaseq_sessions AS s
      WHERE s.queue = p_queue AND s.id = r.session;
      v_room := COALESCE(v_room, FALSE);
    END IF;
    v_acked := v_acked + 1;
    v_sum := v_sum + (v_now - r.delivered_at);
    v_max := GREATEST(v_max, v_now - r.delivered_at);
    IF v_window > 0 THEN
      INSERT INTO leaseq_acked (queue, id, forget_at, group_seq)
      VALUES (p_queue, r.id, v_now + v_window, r.group_seq)
      ON CONFLICT (queue, id) DO UPDATE SET forget_at = excluded.forget_at,
        group_seq = excluded.group_seq;
    END IF;
    RETURN QUERY SELECT FALSE, r.token;
  END LOOP;
  -- The step that forgets the ids remembered here comes by the end of their window at the
  -- latest, as after an ack on the general path. Written only where the queue's next event is
  -- later than that, so that most acks leave the queue's row unlocked.
  IF v_acked > 0 AND v_window > 0 AND COALESCE(q.next_event_at > v_now + v_window, TRUE) THEN
    UPDATE leaseq_queues
    SET next_event_at = LEAST(COALESCE(next_event_at, v_now + v_window), v_now + v_window)
    WHERE name = p_queue;
  END IF;
  INSERT INTO leaseq_tallies AS t (queue, slot, active, acks, stale_acks, time_count, time_sum,
    time_max, clock)
  VALUES (p_queue, pg_backend_pid() % 16, -v_acked, v_acked, cardinality(p_tokens) - v_acked,
    v_acked, v_sum, v_max, v_now)
  ON CONFLICT (queue, slot) DO UPDATE SET active = t.active + excluded.active,
    acks = t.acks + excluded.acks, stale_acks = t.stale_acks + excluded.stale_acks,
    time_count = t.time_count + excluded.time_count, time_sum = t.time_sum + excluded.time_sum,
    time_max = GREATEST(t.time_max, excluded.time_max), clock = GREATEST(t.clock, excluded.clock);
  -- The channel the engine's listeners hear (postgres-engine.ts); sent at this statement's commit.
  IF v_room OR (v_acked > 0 AND (q.options::jsonb ->> 'prefetch') IS NOT NULL) THEN
    PERFORM pg_notify('leaseq_wake', p_queue);
  END IF;
END
$fn$;
