import { RemoteError, type RemoteQueue } from '../client/index.js';

/**
 * Consecutive batches of items, in their order, each one request the server takes: at most
 * `maxItems` items and `maxBytes` bytes (the items' as they travel, with `separatorBytes`
 * between two, without the request's own envelope). An item larger than `maxBytes` fits no
 * batch.
 */
export class BatchCut {
  private items = 0;
  private bytes = 0;

  constructor(
    readonly maxItems: number,
    readonly maxBytes = Number.POSITIVE_INFINITY,
    private readonly separatorBytes = 0,
  ) {}

  /** Whether an item of `bytes` can travel at all, in a batch of its own. */
  fitsAlone(bytes: number): boolean {
    return bytes <= this.maxBytes;
  }

  /** Whether an item of `bytes` goes in the batch in hand; when not, that batch is full. */
  fits(bytes: number): boolean {
    if (this.items === 0) return this.fitsAlone(bytes);
    return this.items < this.maxItems && this.bytes + this.separatorBytes + bytes <= this.maxBytes;
  }

  add(bytes: number): void {
    this.bytes += (this.items === 0 ? 0 : this.separatorBytes) + bytes;
    this.items += 1;
  }

  /** The batch in hand has as many items as a batch takes. */
  get full(): boolean {
    return this.items >= this.maxItems;
  }

  /** The batch in hand is sent: the next item starts another. */
  clear(): void {
    this.items = 0;
    this.bytes = 0;
  }
}

/**
 * `run` over `items` in parts one after the other, in their order: at most the server's
 * maxBatch, and smaller while a part is more bytes than it takes in one batch (refused whole,
 * nothing done: the part is halved and sent again). Only for calls that PAYLOAD_TOO_LARGE
 * refuses for their size alone (acks, nacks): a publish is refused so for one job's payload
 * too, and halving would publish the jobs before it. Publish measures its jobs instead
 * (BatchCut).
 */
export async function inParts<T, R>(
  queue: RemoteQueue,
  items: readonly T[],
  run: (part: T[]) => Promise<R[]>,
): Promise<R[]> {
  let size = (await queue.limits()).maxBatch;
  const answers: R[] = [];
  for (let start = 0; start < items.length; ) {
    const part = items.slice(start, start + size);
    try {
      answers.push(...(await run(part)));
      start += part.length;
    } catch (error) {
      if (!(error instanceof RemoteError && error.code === 'PAYLOAD_TOO_LARGE') || size === 1) {
        throw error;
      }
      size = Math.ceil(size / 2);
    }
  }
  return answers;
}
