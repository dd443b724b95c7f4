-- The age of a queue's oldest ready job (R17's oldestReadyAge, in every stats call: the
-- /metrics scrape and the dashboard ask for it over and over) was the minimum of ready_since
-- over all of the queue's ready jobs, read row by row: 60 ms at 200,000 ready jobs, and all
-- that time with the queue's row locked, so every reserve, ack and publish of the queue on
-- every node waited behind each scrape. With this index it is the first entry of one range.
-- Each job entering and leaving ready now writes one more index entry.
CREATE INDEX IF NOT EXISTS leaseq_jobs_ready_since ON leaseq_jobs (queue, ready_since)
  WHERE state = 'ready';
