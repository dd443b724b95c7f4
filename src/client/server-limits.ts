import { ClosedError, NotFoundError, StorageUnavailableError } from '../core/index.js';
import { ConnectionLostError } from './errors.js';
import { type HttpTransport, UnansweredError } from './http.js';

/** What `GET /v1/limits` answers (the fields this client uses). */
export interface ServerLimits {
  /** Largest request body the server takes (bytes); Infinity when it does not say. */
  maxBodyBytes: number;
  /** Most entries in one batch request; 100 when the server does not say. */
  maxBatch: number;
  /** Longest long-poll wait of one receive request (ms); 20,000 when the server does not say. */
  maxWaitMs: number;
  /** Longest delay of a publish or nack (ms); Infinity when the server does not say. */
  maxDelayMs: number;
  /**
   * Longest visibility (lease) a receive, extend or queue may ask for (ms); Infinity when the
   * server does not say.
   */
  maxVisibilityMs: number;
  /**
   * Deepest nesting of a request body the server takes; Infinity when it does not say. A payload
   * nested too deep is refused before it is sent (see HttpChannel.execute).
   */
  maxJsonDepth: number;
}

/**
 * A server without `GET /v1/limits` (older than it) is taken to have the default batch and wait
 * limits; its longest delay and lease are not known here (it still refuses past them).
 */
const FALLBACK_LIMITS: ServerLimits = {
  maxBodyBytes: Number.POSITIVE_INFINITY,
  maxBatch: 100,
  maxWaitMs: 20_000,
  maxDelayMs: Number.POSITIVE_INFINITY,
  maxVisibilityMs: Number.POSITIVE_INFINITY,
  maxJsonDepth: Number.POSITIVE_INFINITY,
};

/**
 * The server's limits, asked once for a client at its first need, and again after a failed ask
 * or once `forget` was called.
 */
export class ServerLimitsReader {
  private asked: Promise<ServerLimits> | undefined;

  constructor(private readonly http: Pick<HttpTransport, 'request'>) {}

  /**
   * The limits read may no longer be the server's (it refused a request whole, or went away and
   * may have come back with other settings): they are asked again at the next need.
   */
  forget(): void {
    this.asked = undefined;
  }

  /** The server's limits, read at the first call; a failed read is tried again at the next. */
  read(): Promise<ServerLimits> {
    this.asked ??= this.http.request<Partial<ServerLimits>>('GET', '/v1/limits').then(
      (answer) => ({ ...FALLBACK_LIMITS, ...answer }),
      (error: unknown) => {
        if (error instanceof NotFoundError) return { ...FALLBACK_LIMITS };
        // Unreachable, say: asked again at the next need.
        this.asked = undefined;
        // Whose answer was lost, the ask for the limits; the call that needed them was never
        // sent: it cannot have taken effect.
        if (error instanceof UnansweredError) {
          throw new StorageUnavailableError(
            `cannot reach the server: it did not answer the read of its limits in time; nothing was sent`,
            { cause: error },
          );
        }
        if (error instanceof ConnectionLostError) {
          throw new StorageUnavailableError(
            `cannot reach the server: its limits could not be read (${error.message}); nothing was sent`,
            { cause: error },
          );
        }
        // The client closed as it asked: closed before the call went out.
        if (error instanceof ClosedError) throw new ClosedError('the client is closed');
        throw error;
      },
    );
    return this.asked;
  }
}
