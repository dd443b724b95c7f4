import { describe, expect, it } from 'vitest';
import { describeRedis } from '../../bench/subjects/bullmq.js';
import { PgBossSubject } from '../../bench/subjects/pg-boss.js';
import { openRabbitmq } from '../../bench/subjects/rabbitmq.js';
import { payload } from '../../bench/subjects/subject.js';

type Boss = ConstructorParameters<typeof PgBossSubject>[0];
type Amqplib = NonNullable<Parameters<typeof openRabbitmq>[2]>;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the benchmark drives each system as its report says', () => {
  it('pg-boss W3: a job is settled only once pg-boss has completed it, not when its handler ran', async () => {
    let handler: ((jobs: { id: string; data: unknown }[]) => Promise<void>) | undefined;
    let state = 'active';
    const boss = {
      work: async (_name: string, work: typeof handler) => {
        handler = work;
        return 'worker-1';
      },
      // A round trip to the database: answers on a later turn of the event loop.
      getJobById: async () => {
        await turn();
        return { state };
      },
      offWork: async () => {},
    } as unknown as Boss;
    const subject = new PgBossSubject(boss, 'postgres://127.0.0.1:1/unused');
    const handled: number[] = [];
    const settled: number[] = [];
    const stop = await subject.consume(
      'latency',
      (job) => handled.push(job.n),
      (job) => settled.push(job.n),
    );
    await handler?.([{ id: 'job-7', data: payload(7) }]);
    for (let round = 0; round < 5; round++) await turn();
    expect(handled).toEqual([7]);
    expect(settled).toEqual([]);
    // pg-boss completes the job after the handler returned.
    state = 'completed';
    for (let round = 0; round < 5 && settled.length === 0; round++) await turn();
    expect(settled).toEqual([7]);
    await stop();
  });

  it('RabbitMQ: both connections turn Nagle off, as the other clients do', async () => {
    const options: unknown[] = [];
    const channel = {};
    const connection = {
      createChannel: async () => channel,
      createConfirmChannel: async () => channel,
      close: async () => {},
    };
    const amqplib = {
      connect: async (_url: string, socketOptions?: unknown) => {
        options.push(socketOptions);
        return connection;
      },
    } as unknown as Amqplib;
    await openRabbitmq('amqp://127.0.0.1:1', 'classic', amqplib);
    expect(options).toEqual([{ noDelay: true }, { noDelay: true }]);
  });

  it('Redis: the machine line says whether its append-only file is on, and how it syncs', () => {
    const info = (aof: 0 | 1) =>
      `$40\r\n# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n\r\n` +
      `$30\r\n# Persistence\r\nloading:0\r\naof_enabled:${aof}\r\n\r\n`;
    const config = (fsync: string) =>
      `*2\r\n$11\r\nappendfsync\r\n$${fsync.length}\r\n${fsync}\r\n+PONG\r\n`;
    expect(describeRedis(info(0) + config('everysec'))).toBe('Redis 7.0.15 with the AOF off');
    expect(describeRedis(info(1) + config('always'))).toBe(
      'Redis 7.0.15 with the AOF on (appendfsync always)',
    );
    // CONFIG refused (renamed away on some servers): the policy is not known.
    expect(describeRedis(`${info(1)}-ERR unknown command 'CONFIG'\r\n+PONG\r\n`)).toBe(
      'Redis 7.0.15 with the AOF on (appendfsync ?)',
    );
    expect(describeRedis('')).toBe('Redis ?');
  });
});
