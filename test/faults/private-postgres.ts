import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BIN = process.env.LEASEQ_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/**
 * A PostgreSQL cluster of our own (initdb into a temp dir, trust auth, a free loopback port),
 * for the faults that stop or crash PostgreSQL: the machine's shared server is never touched.
 * As root, the binaries run as the `postgres` user, which PostgreSQL requires.
 */
export class PrivatePostgres {
  private constructor(
    private readonly dir: string,
    readonly port: number,
  ) {}

  /** Why a private cluster cannot run here, or undefined when it can. */
  static unavailable(): string | undefined {
    for (const tool of ['initdb', 'pg_ctl']) {
      if (!existsSync(join(BIN, tool))) return `${join(BIN, tool)} is missing (set LEASEQ_PG_BIN)`;
    }
    return undefined;
  }

  static async start(): Promise<PrivatePostgres> {
    const dir = await mkdtemp(join(tmpdir(), 'leaseq-pg-'));
    if (process.getuid?.() === 0) await chown(dir, ...(await postgresIds()));
    const cluster = new PrivatePostgres(dir, await freePort());
    try {
      await cluster.as(join(BIN, 'initdb'), [
        '-D',
        cluster.data,
        '-A',
        'trust',
        '-U',
        'postgres',
        '--no-sync',
      ]);
      await cluster.pgCtl(['start', '-w', '-t', '30']);
      return cluster;
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** A crash (immediate shutdown: no checkpoint, recovery at the next start), then a start. */
  async crashRestart(): Promise<void> {
    await this.pgCtl(['restart', '-m', 'immediate', '-w', '-t', '30']);
  }

  /** Stops the cluster and deletes its directory. */
  async destroy(): Promise<void> {
    await this.pgCtl(['stop', '-m', 'immediate', '-w', '-t', '30']).catch(() => undefined);
    await rm(this.dir, { recursive: true, force: true });
  }

  private get data(): string {
    return join(this.dir, 'data');
  }

  private pgCtl(args: string[]): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=on`;
    return this.as(join(BIN, 'pg_ctl'), [
      '-D',
      this.data,
      '-l',
      join(this.dir, 'log'),
      '-o',
      options,
      ...args,
    ]);
  }

  private async as(command: string, args: string[]): Promise<void> {
    const root = process.getuid?.() === 0;
    await run(
      root ? 'runuser' : command,
      root ? ['-u', 'postgres', '--', command, ...args] : args,
      {
        timeout: 60_000,
      },
    );
  }
}

async function postgresIds(): Promise<[number, number]> {
  const { stdout } = await run('id', ['-u', 'postgres']);
  const { stdout: group } = await run('id', ['-g', 'postgres']);
  return [Number(stdout.trim()), Number(group.trim())];
}

/** A loopback port nothing listens on (now). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
