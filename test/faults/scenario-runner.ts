import { mkdtempSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RemoteBroker } from '../../src/client/remote-broker.js';
import type { InspectView } from '../../src/core/index.js';
import { deleteQueue, POSTGRES_URL, uniqueQueueName } from '../crash/postgres.js';
import { type CheckResult, checkHistory } from '../history/checkers.js';
import type {
  FinalState,
  HistoryRecorder,
  Op,
  Outcome,
  StorageCrashOp,
} from '../history/history.js';
import { PrivatePostgres } from './private-postgres.js';
import { ServerProcess, type ServerSpec, sleep } from './server-process.js';
import { TcpProxy } from './tcp-proxy.js';
import { Workload } from './workload.js';

export type StorageKind = 'sqlite-fsync' | 'sqlite-os' | 'postgres' | 'private-postgres';

/** What a fault does to the servers, proxies and storage of a running scenario. */
export interface FaultContext {
  readonly servers: ServerProcess[];
  /** One proxy in front of each server: clients talk to these. */
  readonly proxies: TcpProxy[];
  /** Between the servers and PostgreSQL, when the scenario asks for it. */
  readonly databaseProxy: TcpProxy | undefined;
  readonly privatePostgres: PrivatePostgres | undefined;
  /** The SQLite file, for SQLite scenarios. */
  readonly sqlitePath: string | undefined;
  /** Starts server `index` again on its storage and points its proxy at it. */
  restart(index: number): Promise<void>;
  /** Writes fault-hooks.mjs's control file and has server `index` apply it. */
  control(index: number, settings: { clockOffsetMs?: number; diskFull?: boolean }): Promise<void>;
  /** Starts a server on `spec` that must refuse to start: resolves with what it printed. */
  expectRefusal(spec: Partial<ServerSpec>): Promise<string>;
  /**
   * Runs `crash`, which crashes the storage and brings it back, and writes it into the history:
   * reservations granted just before may be lost with it (R21), which the checkers then allow.
   */
  crashStorage(crash: () => Promise<void>): Promise<void>;
  /** Records what happened, for the report. */
  note(text: string): void;
  /** An expectation of the fault itself failed. */
  fail(text: string): void;
}

export interface Scenario {
  name: string;
  /** What the fault does, for docs/reliability.md. */
  description: string;
  storage: StorageKind;
  servers?: number;
  /** Puts a proxy between the servers and PostgreSQL. */
  databaseProxy?: boolean;
  /** Loads fault-hooks.mjs into the servers. */
  hooks?: boolean;
  /** Runs during the load phase; should end within `loadMs`. */
  nemesis(context: FaultContext, loadMs: number): Promise<void>;
}

export interface ScenarioResult {
  scenario: string;
  seed: number;
  durationMs: number;
  counts: Record<string, Record<Outcome, number>>;
  checks: CheckResult[];
  /** Acks answered false (the lease had run out, or was lost), and deliveries after the first. */
  staleAcks: number;
  redeliveries: number;
  notes: string[];
  /** Failures beyond the checkers: the fault's own expectations, a drain that did not end. */
  problems: string[];
  skipped?: string;
}

const VISIBILITY_MS = 800;

/**
 * Runs one scenario: servers (with proxies in front), a workload recording its history, the
 * fault during the load phase, then a drain with every fault healed, then the checkers.
 */
export async function runScenario(
  scenario: Scenario,
  options: { loadMs: number; seed: number; drainMs?: number; transport?: 'http' | 'stream' },
): Promise<ScenarioResult> {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-faults-'));
  const notes: string[] = [];
  const problems: string[] = [];
  const cleanups: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true })];
  const queue = scenario.storage === 'postgres' ? uniqueQueueName(scenario.name) : 'faults';
  try {
    const storage = await prepareStorage(scenario, dir, cleanups);
    const controlFile = join(dir, 'fault-control.json');
    const spec: ServerSpec = {
      storage: storage.url,
      ...(scenario.storage === 'sqlite-os' ? { durability: 'os' as const } : {}),
      ...(scenario.hooks ? { faultControl: controlFile } : {}),
    };
    if (scenario.hooks) await writeFile(controlFile, '{}');
    const servers: ServerProcess[] = [];
    const proxies: TcpProxy[] = [];
    cleanups.unshift(async () => {
      await Promise.all(servers.map((server) => server.terminate()));
      await Promise.all(proxies.map((proxy) => proxy.close()));
    });
    for (let i = 0; i < (scenario.servers ?? 1); i++) {
      const server = new ServerProcess(spec, `${scenario.name} server ${i}`);
      servers.push(server);
      await server.listening();
      const proxy = new TcpProxy(server.port);
      await proxy.listen();
      proxies.push(proxy);
    }
    const endpoints = proxies.map((proxy) => `http://127.0.0.1:${proxy.port}`);
    const admin = new RemoteBroker(endpoints[0] as string, { transport: 'http', timeoutMs: 5000 });
    cleanups.unshift(() => admin.close());
    await admin.createQueue(queue, { visibility: VISIBILITY_MS, maxDeliveries: 4 });
    if (scenario.storage === 'postgres') cleanups.push(() => deleteQueue(queue));

    const workload = new Workload({
      label: `${scenario.name}-${options.seed}`,
      queue,
      endpoints,
      visibilityMs: VISIBILITY_MS,
      producers: 2,
      consumers: 4,
      seed: options.seed,
      transport: options.transport ?? 'http',
    });
    const context = faultContext({
      scenario,
      spec,
      servers,
      proxies,
      storage,
      notes,
      problems,
      controlFile,
      recorder: workload.recorder,
    });
    workload.start();
    await Promise.all([scenario.nemesis(context, options.loadMs), sleep(options.loadMs)]);
    for (const proxy of proxies) proxy.setMode('pass');
    await workload.stopProducing();
    const view = await drain(admin, queue, options.drainMs ?? 30_000);
    await workload.stop();
    if (view === undefined) {
      const logs = servers.map((server) => `${server.label}:\n${server.log.slice(-3000)}`);
      problems.push(`the drain did not empty the queue in time\n${logs.join('\n')}`);
    }
    const final = finalState(
      view ??
        (await admin
          .handle(queue)
          .inspect()
          .catch(() => emptyView())),
    );
    problems.push(...workload.anomalies);
    const checks = checkHistory(workload.recorder.ops, final);
    for (const { checker, excused = [] } of checks) {
      if (excused.length > 0) {
        notes.push(`${checker}: ${excused.length} excused (R21), e.g. ${excused[0]}`);
      }
    }
    return {
      scenario: scenario.name,
      seed: options.seed,
      durationMs: Date.now() - started,
      counts: workload.recorder.counts(),
      checks,
      ...settleFigures(workload.recorder.ops),
      notes,
      problems,
    };
  } finally {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  }
}

async function prepareStorage(
  scenario: Scenario,
  dir: string,
  cleanups: (() => Promise<unknown>)[],
): Promise<{
  url: string;
  sqlitePath?: string;
  databaseProxy?: TcpProxy;
  privatePostgres?: PrivatePostgres;
}> {
  if (scenario.storage === 'sqlite-fsync' || scenario.storage === 'sqlite-os') {
    const path = join(dir, 'faults.db');
    return { url: `sqlite:${path}`, sqlitePath: path };
  }
  let url = POSTGRES_URL;
  let privatePostgres: PrivatePostgres | undefined;
  if (scenario.storage === 'private-postgres') {
    privatePostgres = await PrivatePostgres.start();
    const cluster = privatePostgres;
    cleanups.push(() => cluster.destroy());
    url = cluster.url;
  }
  if (!scenario.databaseProxy) return { url, ...(privatePostgres ? { privatePostgres } : {}) };
  const target = new URL(url);
  const databaseProxy = new TcpProxy(Number(target.port || 5432));
  await databaseProxy.listen();
  cleanups.unshift(() => databaseProxy.close());
  target.hostname = '127.0.0.1';
  target.port = String(databaseProxy.port);
  return { url: target.toString(), databaseProxy, ...(privatePostgres ? { privatePostgres } : {}) };
}

/** Waits until nothing is ready, delayed or active; the view then, or undefined on timeout. */
async function drain(admin: RemoteBroker, queue: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const view = await admin.handle(queue).inspect();
      if (view.ready.length + view.delayed.length + view.active.length === 0) return view;
    } catch {
      // the server may still be coming back
    }
    await sleep(250);
  }
  return undefined;
}

function settleFigures(ops: readonly Op[]): { staleAcks: number; redeliveries: number } {
  let staleAcks = 0;
  let redeliveries = 0;
  for (const op of ops) {
    if (op.f === 'ack' && op.outcome === 'ok' && op.applied === false) staleAcks += 1;
    if (op.f === 'receive') redeliveries += op.deliveries.filter((d) => d.deliveryCount > 1).length;
  }
  return { staleAcks, redeliveries };
}

function emptyView(): InspectView {
  return { queueTime: 0, ready: [], delayed: [], active: [], dead: [] };
}

function finalState(view: InspectView): FinalState {
  return {
    dead: view.dead.map(({ id, reason }) => ({ id, reason })),
    left: [
      ...view.ready,
      ...view.delayed.map((each) => each.id),
      ...view.active.map((each) => each.id),
    ],
  };
}

interface ContextParts {
  scenario: Scenario;
  spec: ServerSpec;
  servers: ServerProcess[];
  proxies: TcpProxy[];
  storage: Awaited<ReturnType<typeof prepareStorage>>;
  notes: string[];
  problems: string[];
  controlFile: string;
  recorder: HistoryRecorder;
}

function faultContext(parts: ContextParts): FaultContext {
  const { scenario, spec, servers, proxies, storage, notes, problems, controlFile, recorder } =
    parts;
  let settings: { clockOffsetMs?: number; diskFull?: boolean } = {};
  return {
    servers,
    proxies,
    databaseProxy: storage.databaseProxy,
    privatePostgres: storage.privatePostgres,
    sqlitePath: storage.sqlitePath,
    async restart(index) {
      const server = new ServerProcess(spec, `${scenario.name} server ${index}`);
      servers[index] = server;
      await server.listening();
      proxies[index]?.retarget(server.port);
    },
    async control(index, next) {
      settings = { ...settings, ...next };
      await writeFile(controlFile, JSON.stringify(settings));
      const server = servers[index] as ServerProcess;
      const before = server.log.split('fault-hooks: applied').length;
      server.signal('SIGUSR2');
      for (let waited = 0; waited < 5000; waited += 20) {
        if (server.log.split('fault-hooks: applied').length > before) return;
        await sleep(20);
      }
      problems.push(`${server.label} did not apply the fault control ${JSON.stringify(settings)}`);
    },
    async expectRefusal(override) {
      const server = new ServerProcess({ ...spec, ...override }, `${scenario.name} refusal`);
      try {
        await server.listening(15_000);
      } catch {
        return server.log;
      }
      problems.push(
        `a server on ${override.storage ?? spec.storage} started, but should have refused`,
      );
      await server.kill();
      return server.log;
    },
    async crashStorage(crash) {
      // The servers run on this machine: their clock is this one's (no clock fault here).
      const from = Date.now();
      await recorder.record<StorageCrashOp, void>(
        'nemesis',
        { f: 'storage-crash', from, to: from },
        crash,
        () => ({ to: Date.now() }),
      );
    },
    note: (text) => notes.push(text),
    fail: (text) => problems.push(text),
  };
}
