import type { Engine, QueueHandle } from '../../src/engine/index.js';
import { type CrashCounts, CrashHistory } from './crash-history.js';
import { Child, describeExit, sleep } from './processes.js';
import { between, formatLine, type Line, prng } from './protocol.js';

export interface CrashRunConfig {
  /** Names the run in failure messages. */
  label: string;
  /** The storage the children open with `open(url, { durability })`. */
  url: string;
  durability?: 'fsync' | 'os';
  queue: string;
  rounds: number;
  seed: number;
  /** The queue's visibility (ms): leases of killed children run out in the next rounds. */
  visibility: number;
  /** Opens the same storage in this process, to read it between rounds and to drain it. */
  openEngine: () => Promise<Engine>;
}

export interface CrashRunResult {
  counts: CrashCounts;
  committedJobs: number;
  killDelays: number[];
}

/** Kill delays after the child reports ready, ms. */
const KILL_AFTER = [50, 400] as const;

/**
 * Runs `rounds` children one after the other on the same storage, each killed with SIGKILL at a
 * random moment while it publishes and consumes. After each kill the storage is read here and
 * checked against everything the children reported (CrashHistory). At the end every lease is
 * let run out, everything is drained, and each job must have ended exactly once.
 */
export async function runCrashRounds(config: CrashRunConfig): Promise<CrashRunResult> {
  const random = prng(config.seed);
  const history = new CrashHistory(config.label, config.seed);
  const killDelays: number[] = [];
  await withQueue(config, async () => undefined);

  for (let round = 0; round < config.rounds; round++) {
    const child = new Child(`${config.label} r${round}`, {
      mode: 'crash',
      url: config.url,
      ...(config.durability === undefined ? {} : { durability: config.durability }),
      queue: config.queue,
      visibility: config.visibility,
      seed: Math.floor(random() * 2 ** 31),
      idPrefix: `r${round}-`,
      publishers: 2,
      consumers: 4,
      lifetimeMs: 15_000,
    });
    await child.waitFor('ready', 10_000);
    const delay = between(random, ...KILL_AFTER);
    killDelays.push(delay);
    await sleep(delay);
    child.kill();
    const exit = await child.closedWithin(5000);
    history.notes.push(`r${round}: pid ${child.pid} killed ${delay} ms after ready`);
    history.addRound(round, child.lines, child.texts);
    if (exit.signal !== 'SIGKILL') {
      history.violate(
        `r${round}: the child ended by ${describeExit(exit)} before its kill: ${child.stderr}`,
        [],
      );
    }
    for (const text of child.malformed) history.violate(`r${round}: malformed line ${text}`, []);
    const view = await withQueue(config, (handle) => handle.inspect());
    history.checkView(round, view);
    history.throwIfViolated();
  }

  await withQueue(config, async (handle) => {
    // Past every lease (visibility) and every publish delay (≤ 200 ms): all is ready again.
    const now = (await handle.queueTime()) + config.visibility + 1000;
    const lines: Line[] = [];
    for (;;) {
      const deliveries = await handle.reserve(now, { max: 500, visibility: 60_000 });
      if (deliveries.length === 0) break;
      for (const { id, token, deliveryCount } of deliveries) {
        lines.push({ kind: 'reserved', id, token, deliveryCount }, { kind: 'acking', id, token });
      }
      const oks = await handle.ackMany(
        now,
        deliveries.map((delivery) => delivery.token),
      );
      deliveries.forEach(({ id, token }, index) => {
        lines.push({ kind: 'acked', id, token, ok: oks[index] === true });
      });
    }
    const drain = config.rounds;
    history.addRound(drain, lines, lines.map(formatLine));
    const view = await handle.inspect();
    history.checkView(drain, view);
    history.checkFinal(view, await handle.stats(now));
  });
  history.throwIfViolated();
  return { counts: history.counts, committedJobs: history.committedCount, killDelays };
}

async function withQueue<T>(
  config: CrashRunConfig,
  use: (handle: QueueHandle) => Promise<T>,
): Promise<T> {
  const engine = await config.openEngine();
  try {
    return await use(await engine.queue(config.queue, { visibility: config.visibility }));
  } finally {
    await engine.close();
  }
}
