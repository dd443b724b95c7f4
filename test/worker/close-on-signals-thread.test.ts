import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';

const SIGNALS = new URL('../../src/worker/signals.ts', import.meta.url).href;

interface Answer {
  installed?: boolean;
  code?: string;
  message?: string;
  listeners?: number;
  failed?: string;
}

/**
 * Calls closeOnSignals in a worker thread, the sources loaded through tsx (resolved from the
 * project's root, where the tests run): what it did.
 */
async function closeOnSignalsInThread(): Promise<Answer> {
  const code = `
    const { parentPort } = require('node:worker_threads');
    import('tsx/esm/api').then(({ register }) => {
      register();
      return import(${JSON.stringify(SIGNALS)});
    }).then(({ closeOnSignals }) => {
      const before = process.listenerCount('SIGTERM');
      const answer = {};
      try {
        closeOnSignals({ close: async () => undefined });
        answer.installed = true;
      } catch (error) {
        answer.code = error.code;
        answer.message = error.message;
      }
      answer.listeners = process.listenerCount('SIGTERM') - before;
      parentPort.postMessage(answer);
    }, (error) => parentPort.postMessage({ failed: String(error) }));
  `;
  const thread = new Worker(code, { eval: true });
  try {
    return await new Promise<Answer>((resolve, reject) => {
      thread.once('message', resolve);
      thread.once('error', reject);
      thread.once('exit', (exitCode) => reject(new Error(`the thread ended (${exitCode})`)));
    });
  } finally {
    await thread.terminate();
  }
}

describe('closeOnSignals in a worker thread', () => {
  it('is refused with UNSUPPORTED, no listener left, since signals reach the main thread only', async () => {
    const answer = await closeOnSignalsInThread();
    expect(answer.failed).toBeUndefined();
    expect(answer).toMatchObject({ code: 'UNSUPPORTED', listeners: 0 });
    expect(answer.installed).toBeUndefined();
    expect(answer.message).toContain('main thread');
  });
});
