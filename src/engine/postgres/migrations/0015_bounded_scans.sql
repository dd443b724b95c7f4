-- The one-statement reserve and ack of 0013, their scans bounded for plans made once per
-- connection: a reserve's scan of ready positions starts at the queue's head (the entries of
-- jobs taken before it, until VACUUM removes them, are not walked again), and an ack finds each
-- token by equality, which the token index serves (an `= ANY` of an array parameter made the
-- plan walk every job of the queue).
CREATE OR REPLACE FUNCTION leaseq_reserve(p_queue TEXT, p_now BIGINT, p_max BIGINT, p_visibility BIGINT,
  p_follow BOOLEAN, p_block BIGINT)
RETURNS TABLE (fallback BOOLEAN, id TEXT, payload TEXT, delivery_count INTEGER, token BIGINT,
  grp TEXT, deadline BIGINT)
LANGUAGE plpgsql AS $fn$
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

CREATE OR REPLACE FUNCTION leaseq_ack(p_queue TEXT, p_now BIGINT, p_tokens BIGINT[], p_follow BOOLEAN)
RETURNS TABLE (fallback BOOLEAN, token BIGINT)
LANGUAGE plpgsql AS $fn$
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
  IF v_now >= COALESCE(q.next_event_at, v_now + 1) OR EXISTS (
    SELECT 1 FROM unnest(p_tokens) AS t(token)
    JOIN leaseq_jobs AS j ON j.queue = p_queue AND j.token = t.token
    WHERE j.grp IS NOT NULL
  ) THEN
    RETURN QUERY SELECT TRUE, NULL::bigint;
    RETURN;
  END IF;
  v_window := COALESCE((q.options::jsonb ->> 'dedupWindow')::bigint, 0);
  FOREACH v_token IN ARRAY p_tokens LOOP
    DELETE FROM leaseq_jobs AS j
    WHERE j.queue = p_queue AND j.token = v_token AND j.state = 'active'
    RETURNING j.id, j.token, j.delivered_at, j.group_seq INTO r;
    CONTINUE WHEN NOT FOUND;
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
  INSERT INTO leaseq_tallies AS t (queue, slot, active, acks, stale_acks, time_count, time_sum,
    time_max, clock)
  VALUES (p_queue, pg_backend_pid() % 16, -v_acked, v_acked, cardinality(p_tokens) - v_acked,
    v_acked, v_sum, v_max, v_now)
  ON CONFLICT (queue, slot) DO UPDATE SET active = t.active + excluded.active,
    acks = t.acks + excluded.acks, stale_acks = t.stale_acks + excluded.stale_acks,
    time_count = t.time_count + excluded.time_count, time_sum = t.time_sum + excluded.time_sum,
    time_max = GREATEST(t.time_max, excluded.time_max), clock = GREATEST(t.clock, excluded.clock);
END
$fn$;
