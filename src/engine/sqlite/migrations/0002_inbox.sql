-- The inbox: job ids a consumer has processed, written in the same transaction as its effects.
CREATE TABLE leaseq_inbox (
  consumer TEXT NOT NULL,
  job_id TEXT NOT NULL,
  PRIMARY KEY (consumer, job_id)
);
