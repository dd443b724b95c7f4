import { existsSync, mkdirSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium (apt-get install chromium); never a downloaded browser. */
export const CHROMIUM = '/usr/bin/chromium';

export const hasChromium = existsSync(CHROMIUM);

/** Under CI the browser tests must run: a missing Chromium fails them instead of skipping. */
export const skipBrowser = !hasChromium && process.env.CI !== 'true';

export function launchChromium(): Promise<Browser> {
  if (!hasChromium) {
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Screenshots land here (gitignored); LEASEQ_DOC_IMAGES=1 also refreshes docs/images. */
export const ARTIFACTS = new URL('../../test-artifacts/dashboard/', import.meta.url);
export const DOC_IMAGES =
  process.env.LEASEQ_DOC_IMAGES === '1'
    ? new URL('../../docs/images/', import.meta.url)
    : undefined;

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return new URL(name, ARTIFACTS).pathname;
}

/** A call of the API under a server's URL with `key`; the answer's body read loosely. */
export async function callApi(
  url: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}
