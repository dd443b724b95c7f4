import { readFileSync } from 'node:fs';

/** This package's version, read from package.json (two folders up, from src/ and dist/ alike). */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;
