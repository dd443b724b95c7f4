import type { Socket } from 'node:net';
import { WebSocket } from 'ws';

// biome-ignore lint/suspicious/noExplicitAny: tests read frames loosely
export type Frame = any;

/** A raw WebSocket client of the stream that keeps every frame it receives, for assertions. */
export class FrameClient {
  readonly frames: Frame[] = [];
  private waiters: { test: (frame: Frame) => boolean; resolve: (frame: Frame) => void }[] = [];
  closeCode: number | undefined;
  readonly closed: Promise<number>;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data));
      this.frames.push(frame);
      for (const waiter of [...this.waiters]) {
        if (waiter.test(frame)) {
          this.waiters = this.waiters.filter((other) => other !== waiter);
          waiter.resolve(frame);
        }
      }
    });
    this.closed = new Promise((resolve) =>
      socket.on('close', (code) => {
        this.closeCode = code;
        resolve(code);
      }),
    );
  }

  static async open(baseUrl: string, apiKey?: string): Promise<FrameClient> {
    const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/v1/stream`, {
      headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` },
    });
    const client = new FrameClient(socket);
    await client.next((frame) => frame.type === 'ready');
    return client;
  }

  send(frame: unknown): void {
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The first frame received (already, or from now on) that passes `test`. */
  next(test: (frame: Frame) => boolean, timeoutMs = 5000): Promise<Frame> {
    const seen = this.frames.find(test);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no such frame in time')), timeoutMs);
      this.waiters.push({
        test,
        resolve: (frame) => {
          clearTimeout(timer);
          resolve(frame);
        },
      });
    });
  }

  /** Sends a frame and waits for the answer carrying its id. */
  async request(frame: { id: number } & Record<string, unknown>): Promise<Frame> {
    const answer = this.next((each) => each.id === frame.id && each.type !== 'deliveries');
    this.send(frame);
    return answer;
  }

  pushed(subscription: number): Frame[] {
    return this.frames
      .filter((frame) => frame.type === 'deliveries' && frame.subscription === subscription)
      .flatMap((frame) => frame.deliveries);
  }

  close(): Promise<number> {
    this.socket.close();
    return this.closed;
  }
}

/**
 * Writes `text` as one WebSocket text frame (whole, FIN; its length in the 8 bytes after 127)
 * straight to `socket`'s TCP socket, in 100 parts 25 ms apart: 2.5 s for the frame to come
 * whole. `masked` (a client's frame) masks it with a key of zeros, which leaves the bytes as
 * they are. Returns the writer's timer, for the test to clear.
 */
export function writeTextFrameSlowly(
  socket: WebSocket,
  text: Buffer,
  masked: boolean,
): NodeJS.Timeout {
  const header = Buffer.alloc(masked ? 14 : 10);
  header[0] = 0x81;
  header[1] = (masked ? 0x80 : 0) | 127;
  header.writeBigUInt64BE(BigInt(text.length), 2);
  const raw = (socket as unknown as { _socket: Socket })._socket;
  raw.write(header);
  const part = Math.ceil(text.length / 100);
  let at = 0;
  const writer = setInterval(() => {
    raw.write(text.subarray(at, at + part));
    at += part;
    if (at >= text.length) clearInterval(writer);
  }, 25);
  return writer;
}
