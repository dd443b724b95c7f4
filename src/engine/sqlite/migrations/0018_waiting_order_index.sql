-- R24, R17: inspect's waiting jobs, in group order, cut to its limit (the dashboard asks for the
-- first of them every 2 s): it read every job of the queue through the primary key and sorted
-- the waiting ones, 33 ms at 99,000 waiting (0.2 ms at as many ready ones). Here the limit is
-- the first entries of one range.
CREATE INDEX IF NOT EXISTS leaseq_jobs_waiting ON leaseq_jobs (queue, group_seq)
  WHERE state = 'waiting';
