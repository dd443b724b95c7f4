-- The one-statement path (R21): a reserve or an ack is one round trip, a function that does
-- what the general path does for the common case and answers `fallback` (having changed
-- nothing) for everything else. Reservations commit without waiting for the WAL flush; their
-- tokens stay unique across a crash that loses them through a high-water mark made durable
-- before any token above the previous one is answered.
--
-- Locks: the general path (every transaction through leaseq_load_queue) and reserve hold the
-- queue's row; an ack does not, so acks on several nodes commit (and wait for their WAL
-- flushes) side by side. An ack holds the queue's advisory lock shared and the general path
-- holds it exclusive: no ack runs beside a transaction that may move the same active jobs.
-- What an ack changes in the queue row waits in leaseq_tallies, one row per queue and slot
-- (a backend's pid modulo 16), and is folded into the row by the next general transaction.
ALTER TABLE leaseq_queues ADD COLUMN token_high_water BIGINT NOT NULL DEFAULT 0;
UPDATE leaseq_queues SET token_high_water = next_token - 1;

-- Crash recovery empties an unlogged table; a clean shutdown keeps it. An empty table thus
-- says that commits which did not wait for the WAL flush may have been lost.
CREATE UNLOGGED TABLE leaseq_alive (since BIGINT NOT NULL);

CREATE TABLE leaseq_tallies (
  queue TEXT NOT NULL,
  slot INTEGER NOT NULL,
  active BIGINT NOT NULL,
  acks BIGINT NOT NULL,
  stale_acks BIGINT NOT NULL,
  time_count BIGINT NOT NULL,
  time_sum BIGINT NOT NULL,
  time_max BIGINT NOT NULL,
  clock BIGINT NOT NULL,
  PRIMARY KEY (queue, slot)
);

-- The queue row for a transaction of the general path, locked, with the acks' tallies folded in.
CREATE FUNCTION leaseq_load_queue(p_queue TEXT) RETURNS SETOF leaseq_queues
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  PERFORM pg_advisory_xact_lock(744503, hashtext(p_queue));
  IF NOT EXISTS (SELECT 1 FROM leaseq_tallies WHERE queue = p_queue) THEN
    RETURN QUERY SELECT * FROM leaseq_queues WHERE name = p_queue FOR UPDATE;
    RETURN;
  END IF;
  RETURN QUERY
  WITH t AS (DELETE FROM leaseq_tallies WHERE queue = p_queue RETURNING *),
  s AS (
    SELECT SUM(active) AS active, SUM(acks) AS acks, SUM(stale_acks) AS stale_acks,
      SUM(time_count) AS time_count, SUM(time_sum) AS time_sum, MAX(time_max) AS time_max,
      MAX(clock) AS clock
    FROM t
  )
  UPDATE leaseq_queues AS q SET active_count = q.active_count + s.active,
    clock = GREATEST(q.clock, s.clock),
    counters = leaseq_add_counters(q.counters, jsonb_build_object('acks', s.acks,
      'staleAcks', s.stale_acks, 'processingTime',
      jsonb_build_object('count', s.time_count, 'sum', s.time_sum)), s.time_max)
  FROM s WHERE q.name = p_queue
  RETURNING q.*;
END
$fn$;

-- A deleted queue takes its tallies with it, once no ack of it is under way.
CREATE FUNCTION leaseq_queue_deleted() RETURNS TRIGGER LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(744503, hashtext(OLD.name));
  DELETE FROM leaseq_tallies WHERE queue = OLD.name;
  RETURN OLD;
END
$fn$;
CREATE TRIGGER leaseq_queue_deleted BEFORE DELETE ON leaseq_queues
  FOR EACH ROW EXECUTE FUNCTION leaseq_queue_deleted();

-- After a crash, token counters continue above their marks (a gap, never a repeat). Run on
-- every new connection before its first transaction; a no-op but for the first one after a crash.
CREATE FUNCTION leaseq_continue_after_crash() RETURNS VOID LANGUAGE plpgsql AS $fn$
BEGIN
  IF EXISTS (SELECT 1 FROM leaseq_alive) THEN RETURN; END IF;
  PERFORM pg_advisory_xact_lock(744502);
  IF EXISTS (SELECT 1 FROM leaseq_alive) THEN RETURN; END IF;
  UPDATE leaseq_queues SET next_token = token_high_water + 1 WHERE next_token <= token_high_water;
  INSERT INTO leaseq_alive (since) VALUES ((EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint);
END
$fn$;

-- counters (JSON text) with `deltas` added to its numeric keys, and processingTime's max raised.
CREATE FUNCTION leaseq_add_counters(counters TEXT, deltas JSONB, time_max BIGINT) RETURNS TEXT
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  c JSONB := counters::jsonb;
  k TEXT;
  v JSONB;
BEGIN
  FOR k, v IN SELECT * FROM jsonb_each(deltas) LOOP
    IF k = 'processingTime' THEN
      c := jsonb_set(c, '{processingTime}', jsonb_build_object(
        'count', COALESCE((c #>> '{processingTime,count}')::bigint, 0) + (v ->> 'count')::bigint,
        'sum', COALESCE((c #>> '{processingTime,sum}')::bigint, 0) + (v ->> 'sum')::bigint,
        'max', GREATEST(COALESCE((c #>> '{processingTime,max}')::bigint, 0), time_max)));
    ELSIF (v #>> '{}')::bigint <> 0 THEN
      c := jsonb_set(c, ARRAY[k], to_jsonb(COALESCE((c ->> k)::bigint, 0) + (v #>> '{}')::bigint));
    END IF;
  END LOOP;
  RETURN c::text;
END
$fn$;

-- Their plans are made once per connection, so every scan is bounded by what the index holds
-- in order: ready positions from the queue's head (not the entries of jobs taken before, which
-- stay in the index until VACUUM), tokens by equality (an `= ANY` of an array parameter made the
-- plan walk every job of the queue).
--
-- A reserve of up to p_max jobs without a session, acked by the consumer, on a queue without
-- priorities in use, at a time before its next event, not paused. Tokens in ready order.
CREATE FUNCTION leaseq_reserve(p_queue TEXT, p_now BIGINT, p_max BIGINT, p_visibility BIGINT,
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

-- An ack of tokens none of whose jobs is in a group, at a time before the queue's next event.
-- Answers the tokens that were live (each once); the others are stale. Its changes to the queue
-- row go to the tallies.
CREATE FUNCTION leaseq_ack(p_queue TEXT, p_now BIGINT, p_tokens BIGINT[], p_follow BOOLEAN)
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
