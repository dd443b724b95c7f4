-- R34: the page of dead letters without payloads (the dashboard's list, every 2 s) selects no
-- payload, yet read each job's row, and every column after the payload lies past the payload's
-- overflow pages (a payload over about 1 KB overflows): SQLite walked them all while the page
-- held the event loop. A page of 200 dead jobs of 200 KB took 57 ms; of 1,000 dead jobs of
-- 1 KB, 12. Here are the columns that page reads, and inspect's dead list too, in its order:
-- each is a range of this index alone (0.7 ms and 2.7). Only a death writes an entry, and a
-- death still writes one: the index takes the place of leaseq_jobs_dead, whose key it begins with.
CREATE INDEX IF NOT EXISTS leaseq_jobs_dead_letters ON leaseq_jobs
  (queue, dead_seq, id, delivery_count, dead_reason, dead_at, history, origin_queue,
   origin_reason, origin_at)
  WHERE state = 'dead';
DROP INDEX IF EXISTS leaseq_jobs_dead;
