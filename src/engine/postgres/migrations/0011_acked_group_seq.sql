-- The group sequence number of an acked grouped job, answered while its id is remembered (R29).
ALTER TABLE leaseq_acked ADD COLUMN group_seq BIGINT;
