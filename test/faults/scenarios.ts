import { copyFile, readFile, stat, truncate, writeFile } from 'node:fs/promises';
import { RemoteBroker } from '../../src/client/remote-broker.js';
import type { FaultContext, Scenario } from './scenario-runner.js';
import type { ServerProcess } from './server-process.js';
import { sleep } from './server-process.js';

const pause = (minMs: number, maxMs: number) =>
  sleep(minMs + Math.floor(Math.random() * (maxMs - minMs + 1)));

/** SIGKILL server `index` every 0.4–1 s of the load phase, restarting it each time. */
function killRepeatedly(index = 0) {
  return async (context: FaultContext, loadMs: number): Promise<void> => {
    const end = Date.now() + loadMs - 1000;
    let kills = 0;
    await pause(400, 800);
    while (Date.now() < end) {
      await (context.servers[index] as ServerProcess).kill();
      kills += 1;
      await context.restart(index);
      await pause(400, 1000);
    }
    context.note(`${kills} SIGKILLs, each followed by a restart on the same storage`);
  };
}

/** Every scenario of `npm run faults`, in report order. */
export const SCENARIOS: Scenario[] = [
  {
    name: 'kill-sqlite-fsync',
    description:
      'SIGKILL of `leaseq serve` under load, restarted on the same SQLite file (durability fsync), again and again',
    storage: 'sqlite-fsync',
    nemesis: killRepeatedly(),
  },
  {
    name: 'kill-sqlite-os',
    description: 'The same with durability os (synchronous=NORMAL: survives a process crash)',
    storage: 'sqlite-os',
    nemesis: killRepeatedly(),
  },
  {
    name: 'kill-postgres',
    description: 'SIGKILL of `leaseq serve` over PostgreSQL under load, restarted, again and again',
    storage: 'postgres',
    nemesis: killRepeatedly(),
  },
  {
    name: 'postgres-restart',
    description:
      'A private PostgreSQL cluster crashes (`pg_ctl restart -m immediate`: no checkpoint, recovery at start) under load, twice; the server stays up',
    storage: 'private-postgres',
    async nemesis(context, loadMs) {
      for (let round = 0; round < 2; round++) {
        await sleep(loadMs / 4);
        const started = Date.now();
        const database = context.privatePostgres;
        if (database !== undefined) await context.crashStorage(() => database.crashRestart());
        context.note(`PostgreSQL crashed and back in ${Date.now() - started} ms`);
      }
      const server = context.servers[0] as ServerProcess;
      if (server.exit !== undefined) {
        context.fail(
          `the server died with PostgreSQL: ${server.log.split('\n').slice(-12).join('\n')}`,
        );
      }
    },
  },
  {
    name: 'connections-cut',
    description: 'The TCP proxy between clients and server resets every connection every 0.2–0.6 s',
    storage: 'sqlite-fsync',
    async nemesis(context, loadMs) {
      const end = Date.now() + loadMs - 500;
      let cut = 0;
      while (Date.now() < end) {
        await pause(200, 600);
        cut += context.proxies[0]?.cut() ?? 0;
      }
      context.note(`${cut} client connections reset`);
    },
  },
  {
    name: 'connections-half-open',
    description:
      'The proxy stops forwarding for 3 s with every socket left open (requests vanish, answers never come, clients time out), then resets them',
    storage: 'sqlite-fsync',
    async nemesis(context, loadMs) {
      const proxy = context.proxies[0];
      for (let round = 0; round < Math.max(1, Math.floor(loadMs / 5000)); round++) {
        await sleep(1000);
        proxy?.setMode('stall');
        await sleep(3000);
        const cut = proxy?.cut() ?? 0;
        proxy?.setMode('pass');
        context.note(`stalled 3 s, then ${cut} half-open connections reset`);
      }
    },
  },
  {
    name: 'postgres-link-half-open',
    description:
      'The proxy between the server and PostgreSQL stalls for 3 s (the database seems alive but never answers), then resets those connections',
    storage: 'postgres',
    databaseProxy: true,
    async nemesis(context) {
      await sleep(1000);
      context.databaseProxy?.setMode('stall');
      await sleep(3000);
      const cut = context.databaseProxy?.cut() ?? 0;
      context.databaseProxy?.setMode('pass');
      context.note(`database link stalled 3 s, then ${cut} connections reset`);
      await sleep(500);
      if (context.servers[0]?.exit !== undefined) context.fail('the server died');
    },
  },
  {
    name: 'clock-step-back',
    description:
      "The server's wall clock steps back 5 s under load; then the server is SIGKILLed and restarted with the clock still behind",
    storage: 'sqlite-fsync',
    hooks: true,
    async nemesis(context, loadMs) {
      await sleep(loadMs / 4);
      await context.control(0, { clockOffsetMs: -5000 });
      await sleep(loadMs / 4);
      await (context.servers[0] as ServerProcess).kill();
      await context.restart(0);
      context.note('clock 5 s back, then SIGKILL and restart with the clock still 5 s behind');
    },
  },
  {
    name: 'clock-jump-forward',
    description:
      "The server's wall clock jumps 60 s forward under load (every lease and delay runs out at once)",
    storage: 'sqlite-fsync',
    hooks: true,
    async nemesis(context, loadMs) {
      await sleep(loadMs / 3);
      await context.control(0, { clockOffsetMs: 60_000 });
      context.note('clock 60 s forward');
    },
  },
  {
    name: 'disk-full',
    description:
      "SQLite's max_page_count is held at the file's size for 2 s (every write needing a page fails with SQLITE_FULL, as on a full disk), then lifted",
    storage: 'sqlite-fsync',
    hooks: true,
    async nemesis(context, loadMs) {
      await sleep(loadMs / 4);
      await context.control(0, { diskFull: true });
      await sleep(300);
      const probe = new RemoteBroker(context.servers[0]?.url as string, { timeoutMs: 5000 });
      try {
        const payload = { filler: 'y'.repeat(60_000) };
        const jobs = Array.from({ length: 5 }, (_, at) => ({ id: `probe-${at}`, payload }));
        await probe.handle('faults').publishBatch(jobs);
        context.fail('a 300 kB publish succeeded on a full disk');
      } catch (error) {
        const { code, message } = error as { code?: string; message?: string };
        context.note(`a publish on the full disk answered ${code}: ${message}`);
        if (code !== 'STORAGE_UNAVAILABLE')
          context.fail(`disk full answered ${code}, not STORAGE_UNAVAILABLE`);
      } finally {
        await probe.close();
      }
      await sleep(1700);
      await context.control(0, { diskFull: false });
      if (context.servers[0]?.exit !== undefined) context.fail('the server died on the full disk');
    },
  },
  {
    name: 'corrupt-file',
    description:
      'The server is stopped and copies of its SQLite file are damaged three ways (bytes overwritten in the middle, the header overwritten, the file cut in half); a server on each copy must refuse to start with a clear error. The intact file is then served again',
    storage: 'sqlite-fsync',
    async nemesis(context, loadMs) {
      await sleep(loadMs / 4);
      await (context.servers[0] as ServerProcess).terminate();
      const path = context.sqlitePath as string;
      const size = (await stat(path)).size;
      const damage: [string, (copy: string) => Promise<void>][] = [
        [
          'bytes overwritten in the middle',
          (copy) => overwrite(copy, Math.floor(size / 2), 12_288),
        ],
        ['header overwritten', (copy) => overwrite(copy, 0, 100)],
        ['cut in half', (copy) => truncate(copy, Math.floor(size / 8192) * 4096)],
      ];
      for (const [name, harm] of damage) {
        const copy = `${path}.${name.replaceAll(' ', '-')}`;
        await copyFile(path, copy);
        await harm(copy);
        const log = await context.expectRefusal({ storage: `sqlite:${copy}` });
        const said = /is damaged \([^)]*\)|file is not a database/.exec(log)?.[0];
        if (said === undefined)
          context.fail(`${name}: refused without saying the file is damaged:\n${log}`);
        context.note(`${name} (${size} B file): refused to start ("${said}")`);
      }
      await context.restart(0);
    },
  },
  {
    name: 'servers-postgres-one-killed',
    description:
      'Three servers over one PostgreSQL database, clients spread over them; one is SIGKILLed under load and its clients move to another',
    storage: 'postgres',
    servers: 3,
    async nemesis(context, loadMs) {
      await sleep(loadMs / 3);
      await (context.servers[1] as ServerProcess).kill();
      context.proxies[1]?.retarget(context.servers[0]?.port as number);
      context.proxies[1]?.cut();
      context.note('server 1 of 3 SIGKILLed; its clients moved to server 0');
    },
  },
];

/** Scenarios `npm test` runs (short): a server crash, a network fault, a damaged file. */
export const QUICK_SCENARIOS = ['kill-sqlite-fsync', 'connections-cut', 'corrupt-file'];

async function overwrite(path: string, offset: number, length: number): Promise<void> {
  const bytes = await readFile(path);
  for (let i = offset; i < Math.min(bytes.length, offset + length); i++)
    bytes[i] = (i * 7919) & 0xff;
  await writeFile(path, bytes);
}
