import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from './helpers.js';

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

const docs = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');

/** The metric names of the first column of the metric table in docs/operations.md. */
function documentedFamilies(): string[] {
  const rows = docs.split('\n').filter((line) => line.startsWith('| `leaseq_'));
  return rows.flatMap((row) => {
    const first = row.split('|')[1] ?? '';
    return [...first.matchAll(/`(leaseq_\w+)/g)].map((match) => match[1] as string);
  });
}

/** The sentence of docs/operations.md that names the series counting this process alone. */
function processLocalSentence(): string {
  const flat = docs.replace(/\s+/g, ' ');
  const sentence = flat.match(/Only the [^.]* series count this server process's own traffic/);
  return sentence?.[0] ?? '';
}

async function scrape(): Promise<string> {
  const answer = await call<string>((server as TestServer).baseUrl, 'GET', '/metrics');
  expect(answer.status).toBe(200);
  return answer.body;
}

function families(text: string): { name: string; help: string }[] {
  const helps = new Map(
    [...text.matchAll(/^# HELP (leaseq_\w+) (.*)$/gm)].map((m) => [m[1] as string, m[2] as string]),
  );
  return [...text.matchAll(/^# TYPE (leaseq_\w+) /gm)].map((match) => {
    const name = match[1] as string;
    return { name, help: helps.get(name) ?? '' };
  });
}

describe('/metrics families and docs/operations.md', () => {
  it('lists every family of a server with the SQS endpoint on, and no family it does not export', async () => {
    server = await startTestServer({ sqs: {} });
    await call(server.baseUrl, 'PUT', '/v1/queues/listed', { body: {} });
    const exported = families(await scrape()).map((family) => family.name);
    expect(exported).toContain('leaseq_sqs_requests_total');
    const documented = documentedFamilies();
    expect(documented.filter((name) => !exported.includes(name))).toEqual([]);
    expect(exported.filter((name) => !documented.includes(name))).toEqual([]);
  });

  it('names every family of this process alone (no queue label) where it says which to sum', async () => {
    server = await startTestServer({ sqs: {} });
    await call(server.baseUrl, 'PUT', '/v1/queues/counted', { body: {} });
    const text = await scrape();
    const own = families(text).filter(
      (family) => !new RegExp(`^${family.name}\\w*\\{queue=`, 'm').test(text),
    );
    const prefixes = [...new Set(own.map((family) => `\`leaseq_${family.name.split('_')[1]}_*\``))];
    expect(prefixes.sort()).toEqual(['`leaseq_http_*`', '`leaseq_sqs_*`', '`leaseq_stream_*`']);
    const sentence = processLocalSentence();
    for (const prefix of prefixes) expect(sentence, prefix).toContain(prefix);
  });

  it('says in the help of a queue counter on memory: that it outlives a restart only in SQL storage', async () => {
    server = await startTestServer();
    await call(server.baseUrl, 'PUT', '/v1/queues/counted', { body: {} });
    const help =
      families(await scrape()).find((family) => family.name === 'leaseq_published_total')?.help ??
      '';
    expect(help).toContain('read from the storage');
    expect(help).not.toMatch(/kept across restarts$/);
    expect(help).toMatch(/kept across restarts on SQLite and PostgreSQL/);
  });
});
