-- Secrets made once per storage and shared by every process using it (the receipt signing key
-- of servers started without one): restarts and several servers agree with no set-up. After a
-- rotation the previous secret is still accepted until previous_until (ms).
CREATE TABLE leaseq_secrets (
  name TEXT PRIMARY KEY,
  current TEXT NOT NULL,
  previous TEXT,
  previous_until BIGINT
);
