-- The age of a queue's oldest ready job (R17's oldestReadyAge, in every stats call: the
-- /metrics scrape and the dashboard ask for it over and over) was the minimum of ready_since
-- over all of the queue's ready jobs, read row by row while the call held the write lock and the
-- event loop: 39 ms at 100,000 ready jobs and 281 ms at 1,000,000 (the benchmark's cost growth
-- table). With this index it is the first entry of one range. Each job entering and leaving
-- ready now writes one more index entry.
CREATE INDEX IF NOT EXISTS leaseq_jobs_ready_since ON leaseq_jobs (queue, ready_since)
  WHERE state = 'ready';
