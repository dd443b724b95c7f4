import type { Subject } from './subject.js';

/** Every system the comparison runs, leaseq's modes first. */
export const SUBJECTS = [
  { name: 'leaseq-memory', label: 'leaseq memory', leaseq: true },
  { name: 'leaseq-sqlite-fsync', label: 'leaseq SQLite fsync', leaseq: true },
  { name: 'leaseq-sqlite-os', label: 'leaseq SQLite os', leaseq: true },
  { name: 'leaseq-postgres', label: 'leaseq PostgreSQL', leaseq: true },
  { name: 'leaseq-stream', label: 'leaseq stream (SQLite fsync)', leaseq: true },
  { name: 'leaseq-http', label: 'leaseq HTTP (SQLite fsync)', leaseq: true },
  { name: 'rabbitmq-classic', label: 'RabbitMQ classic durable', leaseq: false },
  { name: 'rabbitmq-quorum', label: 'RabbitMQ quorum', leaseq: false },
  { name: 'bullmq', label: 'BullMQ', leaseq: false },
  { name: 'pg-boss', label: 'pg-boss', leaseq: false },
] as const;

export type SubjectName = (typeof SUBJECTS)[number]['name'];

export function isSubjectName(name: string): name is SubjectName {
  return SUBJECTS.some((subject) => subject.name === name);
}

/** Where the servers are, and the per-run storage of leaseq's embedded modes. */
export interface Endpoints {
  postgres: string;
  redis: string;
  amqp: string;
  /** leaseq-sqlite-*: the database file (the caller removes it). */
  sqliteFile?: string;
  /** leaseq-stream, leaseq-http: the server the caller started. */
  httpUrl?: string;
}

export async function openSubject(name: SubjectName, endpoints: Endpoints): Promise<Subject> {
  switch (name) {
    case 'leaseq-memory':
    case 'leaseq-sqlite-fsync':
    case 'leaseq-sqlite-os':
    case 'leaseq-postgres':
    case 'leaseq-stream':
    case 'leaseq-http': {
      const { openLeaseq } = await import('./leaseq.js');
      if (name === 'leaseq-memory') return openLeaseq({ url: 'memory:', batchSize: 1000 });
      if (name === 'leaseq-postgres')
        return openLeaseq({ url: endpoints.postgres, batchSize: 1000 });
      if (name === 'leaseq-http' || name === 'leaseq-stream') {
        if (endpoints.httpUrl === undefined) throw new Error(`${name} needs --http-url`);
        // The server's default maxBatch.
        return openLeaseq({
          url: endpoints.httpUrl,
          batchSize: 100,
          transport: name === 'leaseq-http' ? 'http' : 'stream',
        });
      }
      if (endpoints.sqliteFile === undefined) throw new Error(`${name} needs --sqlite-file`);
      return openLeaseq({
        url: `sqlite:${endpoints.sqliteFile}`,
        durability: name === 'leaseq-sqlite-fsync' ? 'fsync' : 'os',
        batchSize: 1000,
      });
    }
    case 'rabbitmq-classic':
    case 'rabbitmq-quorum': {
      const { openRabbitmq } = await import('./rabbitmq.js');
      return openRabbitmq(endpoints.amqp, name === 'rabbitmq-quorum' ? 'quorum' : 'classic');
    }
    case 'bullmq': {
      const { openBullmq } = await import('./bullmq.js');
      return openBullmq(endpoints.redis);
    }
    case 'pg-boss': {
      const { openPgBoss } = await import('./pg-boss.js');
      return openPgBoss(endpoints.postgres);
    }
  }
}
