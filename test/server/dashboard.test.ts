import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { DASHBOARD_CSP } from '../../src/server/ui/dashboard.js';
import { Api } from '../../src/server/ui/web/api.js';
import { startTestServer, type TestServer } from './helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    keys: [
      { name: 'ops', key: 'admin-key-0123456789', allow: [{ queues: '*', actions: ['admin'] }] },
    ],
  });
});

afterAll(async () => {
  await server.close();
});

const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${server.baseUrl}${path}`, { headers, redirect: 'manual' });

/** Where the redirect answered to GET `path` leads, as a browser that asked `base` + `path` follows it. */
const redirectOf = async (path: string, base = server.baseUrl) =>
  new URL((await get(path)).headers.get('location') ?? '', `${base}${path}`).pathname;

describe('the dashboard’s files (built by npm run build)', () => {
  it('GET / redirects to /ui/, which serves the page without a key, under a strict CSP', async () => {
    const root = await get('/');
    expect(root.status).toBe(302);
    expect(await redirectOf('/')).toBe('/ui/');
    const named = await get('/ui/index.html');
    expect(named.status).toBe(301);
    const page = await get('/ui/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toContain("default-src 'self'");
    expect(DASHBOARD_CSP).not.toContain('unsafe');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await page.text();
    // Assets are named with their content hash, so they can be cached for good.
    const script = /src="\.\/(app\.js\?v=[\w-]{8})"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect(html).not.toMatch(/https?:\/\//);
    const asset = await get(`/ui/${script}`, { 'accept-encoding': 'gzip' });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    const again = await get(`/ui/${script}`, { 'if-none-match': asset.headers.get('etag') ?? '' });
    expect(again.status).toBe(304);
  });

  it('the bundle asks nothing of other origins', async () => {
    const html = await (await get('/ui/')).text();
    for (const name of [...html.matchAll(/(?:src|href)="\.\/([\w.-]+)/g)].map((m) => m[1])) {
      const text = await (await get(`/ui/${name}`)).text();
      // No URL to fetch elsewhere (the w3.org SVG namespace is a name, not a request).
      const urls = [...text.matchAll(/(?:fetch|import|url)\(\s*["'`]?(https?:\/\/[^"'`)\s]+)/g)];
      expect(urls, name).toEqual([]);
    }
  });

  it('unknown files are 404 and the page does not list the folder', async () => {
    expect((await get('/ui/nothing.js')).status).toBe(404);
    expect((await get('/ui/..%2Fpackage.json')).status).toBe(404);
    // The page is never served under a cached asset's address: its name leads to /ui/.
    expect(await redirectOf('/ui/index.html')).toBe('/ui/');
  });

  it('under a path prefix of a proxy, leads to its page and calls the API under that prefix', async () => {
    // A proxy serving leaseq at https://example.com/leaseq/ passes each path on without it.
    const proxied = 'https://example.com/leaseq';
    expect(await redirectOf('/', proxied)).toBe('/leaseq/ui/');
    expect(await redirectOf('/ui', proxied)).toBe('/leaseq/ui/');
    expect(await redirectOf('/ui/index.html', proxied)).toBe('/leaseq/ui/');
    // The page at https://example.com/leaseq/ui/ fetches what it reads as the browser does.
    const asked: string[] = [];
    vi.stubGlobal('fetch', async (url: string) => {
      asked.push(new URL(url, `${proxied}/ui/`).pathname);
      return new Response(JSON.stringify({ maxBatch: 100 }), { status: 200 });
    });
    try {
      const api = new Api(() => undefined);
      await api.me();
      await api.allStats();
      await api.queueStats('orders');
      await api.maxBatch();
    } finally {
      vi.unstubAllGlobals();
    }
    expect(asked).toEqual([
      '/leaseq/v1/me',
      '/leaseq/v1/stats',
      '/leaseq/v1/queues/orders/stats',
      '/leaseq/v1/limits',
    ]);
  });

  it('with ui false nothing is served at / or /ui/', async () => {
    const off = await startTestServer({ ui: false });
    try {
      expect((await fetch(`${off.baseUrl}/`, { redirect: 'manual' })).status).toBe(404);
      expect((await fetch(`${off.baseUrl}/ui/`)).status).toBe(404);
      expect((await fetch(`${off.baseUrl}/v1/me`)).status).toBe(200);
    } finally {
      await off.close();
    }
  });
});

describe('the ui setting', () => {
  it('is on by default and set by file, environment or flag', () => {
    expect(loadConfig({}).ui).toBe(true);
    expect(loadConfig({ file: { path: 'c.json', text: '{"ui": false}' } }).ui).toBe(false);
    expect(loadConfig({ env: { LEASEQ_UI: 'off' } }).ui).toBe(false);
    expect(loadConfig({ env: { LEASEQ_UI: 'false' }, flags: { ui: 'true' } }).ui).toBe(true);
    expect(() => loadConfig({ flags: { ui: 'maybe' } })).toThrow(
      'ui: must be true or false (or on, off, 1, 0), got "maybe" (from --ui)',
    );
    expect(() => loadConfig({ file: { path: 'c.json', text: '{"ui": "no"}' } })).toThrow(
      /ui: must be true or false/,
    );
  });
});
