import type { JobContext } from './job.js';

/** What a context asks of the run it belongs to. */
export interface ContextOwner {
  readonly leaseDeadline: number;
  readonly signal: AbortSignal;
  extend(visibility?: number): Promise<number>;
  progress(info?: unknown): void;
  markDuplicate(): void;
}

/**
 * The handler's context. Only what a handler touches is built: the signal on first read (a
 * handler that never looks at it costs no AbortController), the methods on first read, bound
 * so that `const { progress } = ctx` works as it would on a plain object.
 */
export class RunContext<P> implements JobContext<P> {
  readonly #owner: ContextOwner;
  #extend: JobContext<P>['extend'] | undefined;
  #progress: JobContext<P>['progress'] | undefined;
  #duplicate: JobContext<P>['duplicate'] | undefined;

  constructor(
    owner: ContextOwner,
    readonly id: string,
    readonly payload: P,
    readonly token: number,
    readonly deliveryCount: number,
    readonly redelivered: boolean,
  ) {
    this.#owner = owner;
  }

  get deadline(): number {
    return this.#owner.leaseDeadline;
  }

  get signal(): AbortSignal {
    return this.#owner.signal;
  }

  get extend(): JobContext<P>['extend'] {
    const owner = this.#owner;
    this.#extend ??= (visibility?: number) => owner.extend(visibility);
    return this.#extend;
  }

  get progress(): JobContext<P>['progress'] {
    const owner = this.#owner;
    this.#progress ??= (info?: unknown) => owner.progress(info);
    return this.#progress;
  }

  get duplicate(): JobContext<P>['duplicate'] {
    const owner = this.#owner;
    this.#duplicate ??= () => owner.markDuplicate();
    return this.#duplicate;
  }
}
