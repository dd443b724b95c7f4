-- leaseq_reserve, and when it takes nothing, the queue's stored next event: a time at or before
-- the next tick at which time alone changes the queue (the bound leaseq_reserve itself trusts to
-- know that nothing is due). A receiver that goes on to wait learns when to look again in the
-- same round trip, instead of in a transaction of its own that locks the queue's row and would
-- hold up a publish meanwhile. leaseq_reserve stays as it was, for nodes of an earlier version
-- still running beside this one.
CREATE FUNCTION leaseq_reserve_next(p_queue TEXT, p_now BIGINT, p_max BIGINT, p_visibility BIGINT,
  p_follow BOOLEAN, p_block BIGINT)
RETURNS TABLE (fallback BOOLEAN, id TEXT, payload TEXT, delivery_count INTEGER, token BIGINT,
  grp TEXT, deadline BIGINT, next_event_at BIGINT)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT r.fallback, r.id, r.payload, r.delivery_count, r.token, r.grp, r.deadline,
      NULL::bigint
    FROM leaseq_reserve(p_queue, p_now, p_max, p_visibility, p_follow, p_block) AS r;
  IF NOT FOUND THEN
    -- The row is locked by leaseq_reserve until this transaction ends: the value is current.
    RETURN QUERY SELECT FALSE, NULL::text, NULL::text, NULL::integer, NULL::bigint, NULL::text,
        NULL::bigint, q.next_event_at
      FROM leaseq_queues AS q WHERE q.name = p_queue;
  END IF;
END
$fn$;
