import { afterEach, beforeEach, describe } from 'vitest';
import type { QueueOptions } from '../../src/core/index.js';
import type { Engine, EngineCapabilities, QueueHandle } from '../../src/engine/index.js';
import { type EngineUnderTest, queueName } from './engines.js';

/** What a conformance test gets: the engine opened for it, and fresh queues in it. */
export interface EngineHarness {
  readonly name: string;
  /** From the trial open; undefined when it failed (the tests then fail on the same error). */
  readonly capabilities: EngineCapabilities | undefined;
  /** See EngineUnderTest.viaClient. */
  readonly viaClient: boolean;
  /** The engine opened for the running test. */
  engine(): Engine;
  /** A new queue under a name of its own (see `queueName`), deleted after the test. */
  queue(options?: QueueOptions): Promise<QueueHandle>;
  /** A unique queue name; the queue, if the test creates it, is deleted after the test. */
  queueName(label?: string): string;
  /** Has the queue of this name (if any) deleted after the test; returns the name. */
  deleteAfter(name: string): string;
  /** Closes the engine; `reopen` opens it again on the same storage. */
  close(): Promise<void>;
  /** Closes the engine (unless closed) and opens it again on the same storage. */
  reopen(): Promise<Engine>;
}

/**
 * Registers `body` once per engine, in a describe named after the engine. A skipped engine's
 * tests are still listed, under a describe that carries the written reason.
 */
export function describeEngines(
  engines: readonly EngineUnderTest[],
  body: (harness: EngineHarness) => void,
): void {
  for (const underTest of engines) {
    const skipped = underTest.skipReason !== undefined;
    const title = skipped ? `${underTest.name} — skipped: ${underTest.skipReason}` : underTest.name;
    (skipped ? describe.skip : describe)(title, () => {
      const harness = new Harness(underTest);
      beforeEach(() => harness.setUp());
      afterEach(() => harness.tearDown());
      body(harness);
    });
  }
}

class Harness implements EngineHarness {
  private current: Engine | undefined;
  private names: string[] = [];

  constructor(private readonly underTest: EngineUnderTest) {}

  get name(): string {
    return this.underTest.name;
  }

  get capabilities(): EngineCapabilities | undefined {
    return this.underTest.capabilities;
  }

  get viaClient(): boolean {
    return this.underTest.viaClient;
  }

  async setUp(): Promise<void> {
    this.names = [];
    this.current = await this.underTest.factory.open();
  }

  /** Deletes every queue the test named, then closes the engine. */
  async tearDown(): Promise<void> {
    const engine = this.current ?? (await this.underTest.factory.open());
    this.current = undefined;
    try {
      for (const name of this.names) await engine.deleteQueue(name);
    } finally {
      await engine.close();
    }
  }

  engine(): Engine {
    if (this.current === undefined) throw new Error('the engine is closed; call reopen()');
    return this.current;
  }

  queue(options?: QueueOptions): Promise<QueueHandle> {
    return this.engine().queue(this.queueName(), options);
  }

  queueName(label?: string): string {
    return this.deleteAfter(queueName(label));
  }

  deleteAfter(name: string): string {
    this.names.push(name);
    return name;
  }

  async close(): Promise<void> {
    const engine = this.current;
    this.current = undefined;
    await engine?.close();
  }

  async reopen(): Promise<Engine> {
    await this.close();
    this.current = await this.underTest.factory.open();
    return this.current;
  }
}
