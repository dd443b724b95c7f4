import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { acceptsGzip } from '../content-coding.js';
import { STATUS_BY_CODE } from '../errors.js';

/** Where the dashboard is served. */
export const DASHBOARD_PATH = '/ui/';

/**
 * Only this origin, nothing inline: the bundle is one script and one style sheet. Data calls
 * go to the same origin (connect-src), never elsewhere.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.map': 'application/json',
};

interface Asset {
  body: Buffer;
  gzipped: Buffer;
  type: string;
  etag: string;
}

/**
 * The built bundle (`npm run build` writes it to dist/server/ui/public). Running from the
 * TypeScript sources (tests), the module sits in src/ and the bundle is still in dist/.
 */
function bundleDirectory(): URL | undefined {
  const candidates = [
    new URL('./public/', import.meta.url),
    new URL('../../../dist/server/ui/public/', import.meta.url),
  ];
  return candidates.find((dir) => existsSync(new URL('index.html', dir)));
}

/** Reads the bundle once; index.html names its assets with their content hash (cache busting). */
function loadAssets(dir: URL): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const add = (name: string, body: Buffer) => {
    const type = TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream';
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
    assets.set(name, { body, gzipped: gzipSync(body), type, etag });
  };
  for (const name of readdirSync(dir)) {
    if (name !== 'index.html') add(name, readFileSync(new URL(name, dir)));
  }
  const html = readFileSync(new URL('index.html', dir), 'utf8').replace(
    /(href|src)="\.\/([\w.-]+)"/g,
    (whole, attribute: string, name: string) => {
      const asset = assets.get(name);
      return asset === undefined ? whole : `${attribute}="./${name}?v=${asset.etag.slice(1, 9)}"`;
    },
  );
  add('index.html', Buffer.from(html));
  return assets;
}

function send(request: FastifyRequest, reply: FastifyReply, asset: Asset, immutable: boolean) {
  reply
    .header('content-type', asset.type)
    .header('etag', asset.etag)
    .header('vary', 'accept-encoding')
    .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
    .header('content-security-policy', DASHBOARD_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
  if (request.headers['if-none-match'] === asset.etag) return reply.status(304).send();
  if (acceptsGzip(request.headers['accept-encoding'])) {
    return reply.header('content-encoding', 'gzip').send(asset.gzipped);
  }
  return reply.send(asset.body);
}

/**
 * The web dashboard: static files at /ui/ (no key needed; the page asks for one and sends it
 * with each API call), and / redirecting there. Every figure it shows comes from the public API.
 */
export function registerDashboard(
  app: FastifyInstance,
  log: FastifyBaseLogger,
  /** The built bundle's directory; null: none was built. Default: where the build writes it. */
  dir: URL | null = bundleDirectory() ?? null,
): void {
  const assets = dir === null ? undefined : loadAssets(dir);
  if (assets === undefined) {
    log.warn('the dashboard bundle is missing (npm run build makes it): /ui/ answers 501');
  }
  // UNSUPPORTED with its status everywhere (501): this server cannot serve the page.
  const notBuilt = (reply: FastifyReply) =>
    reply.status(STATUS_BY_CODE.UNSUPPORTED).send({
      error: { code: 'UNSUPPORTED', message: 'the dashboard is not built: run npm run build' },
    });
  // Relative, as the page's own links: behind a proxy that serves leaseq under a path prefix
  // (`/leaseq/` to `/`), they lead to `/leaseq/ui/`, not to a `/ui/` of the proxy's.
  app.get('/', (_request, reply) => reply.redirect('ui/', 302));
  app.get('/ui', (_request, reply) => reply.redirect('ui/', 301));
  app.get(DASHBOARD_PATH, (request, reply) => {
    const index = assets?.get('index.html');
    return index === undefined ? notBuilt(reply) : send(request, reply, index, false);
  });
  app.get<{ Params: { file: string } }>(`${DASHBOARD_PATH}:file`, (request, reply) => {
    // The page has one address, served uncached; the hashed assets beside it are cached for good.
    if (request.params.file === 'index.html') return reply.redirect('./', 301);
    const asset = assets?.get(request.params.file);
    if (asset === undefined) {
      return reply.status(404).send({ error: { code: 'NOT_FOUND', message: 'no such file' } });
    }
    return send(request, reply, asset, true);
  });
}
