-- The after-crash check of 0013, also after a restore. A logical backup (pg_dump) copies the row
-- of leaseq_alive with the rest, so a database restored from it looked like one shut down cleanly:
-- its token counters went on from the backup's, handing out again, from the first reservation,
-- the tokens reserved after the backup was taken (a receipt kept from before the restore settled
-- the delivery that got its token back). A row now names the table it was written into, and a
-- restore makes its tables anew (a new table oid): its row is then one of another table, as an
-- emptied one after a crash, and the counters continue above their marks, as a copy of a SQLite
-- file in use does. A physical backup restores an unlogged table empty, as a crash leaves it.
ALTER TABLE leaseq_alive ADD COLUMN table_oid OID;

-- The row there now is taken for no table's: the database being migrated may be one restored
-- from a dump of an earlier version, whose row names no table either. So the first connection
-- after this migration continues above the marks, once (a gap of at most a block per queue,
-- never a repeat), and the row it writes is this table's from then on.

CREATE OR REPLACE FUNCTION leaseq_continue_after_crash() RETURNS VOID LANGUAGE plpgsql AS $fn$
BEGIN
  IF EXISTS (SELECT 1 FROM leaseq_alive WHERE table_oid = tableoid) THEN RETURN; END IF;
  PERFORM pg_advisory_xact_lock(744502);
  IF EXISTS (SELECT 1 FROM leaseq_alive WHERE table_oid = tableoid) THEN RETURN; END IF;
  UPDATE leaseq_queues SET next_token = token_high_water + 1 WHERE next_token <= token_high_water;
  DELETE FROM leaseq_alive;
  INSERT INTO leaseq_alive (since) VALUES ((EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint);
  UPDATE leaseq_alive SET table_oid = tableoid;
END
$fn$;
