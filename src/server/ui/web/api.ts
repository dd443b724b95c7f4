import type {
  AllStats,
  DeadLetterPage,
  DeliveryPage,
  InspectView,
  JobView,
  Me,
  QueueInfo,
  QueueStats,
  StatsQuery,
} from './wire.js';

/** An answer of the API other than 2xx, with its stable code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * No answer of the API: the server could not be reached, did not answer in time, or what
 * answered was not the API (`NOT_THE_API`: a success without its JSON, such as the sign-in page
 * a proxy in front answers with once its own session has run out). Said in an operator's words
 * (a browser's own is "Failed to fetch").
 */
export class NoAnswerError extends Error {
  constructor(
    readonly code: 'UNREACHABLE' | 'TIMEOUT' | 'NOT_THE_API',
    message: string,
  ) {
    super(message);
  }
}

/** Whether `error` says the thing read is not there (404): gone, or never was. */
export const isGone = (error: unknown): boolean =>
  error instanceof ApiError && error.status === 404;

/** How long a call may go unanswered before it is given up. */
export interface Timeouts {
  /** A read (GET), ms: a few of the feed's intervals. */
  readMs: number;
  /** An action (redrive, purge, delete), ms: one over many jobs may take a while. */
  actionMs: number;
}

const TIMEOUTS: Timeouts = { readMs: 6000, actionMs: 30_000 };

/**
 * The API, relative to the page's own address (`…/ui/`): a proxy that serves leaseq under a
 * path prefix (`https://example.com/leaseq/ui/`) has the calls under that prefix too.
 */
const V1 = '../v1';

const path = (queue: string) => `${V1}/queues/${encodeURIComponent(queue)}`;

/** How many dead letters the dashboard reads and lists: the oldest, one page of the API's. */
export const DEAD_LETTERS_SHOWN = 1000;

/**
 * How many deliveries in flight a queue's page reads and lists: the oldest, one page of the
 * API's. Thousands would be half a megabyte at every reading, and as many rows redrawn every
 * second as their deadlines count down.
 */
export const DELIVERIES_SHOWN = 100;

/** How many ready and delayed jobs a queue's page reads and lists: the first of each. */
export const WAITING_SHOWN = 20;

/** What an API key is, as the server's configuration takes it: printable ASCII, no spaces. */
const API_KEY = /^[!-~]+$/;

/** The rule of API_KEY in a person's words. */
export const API_KEY_RULE =
  'an API key is ASCII text (letters, digits and punctuation) without spaces or accents';

/**
 * Whether `key` can be an API key. Any other could not even be sent: a browser refuses a
 * header with a character outside ISO-8859-1 (fetch throws a TypeError).
 */
export const isApiKey = (key: string): boolean => API_KEY.test(key);

/** The public HTTP API, with the API key as a Bearer header. */
export class Api {
  /** The server's maxBatch, asked once (GET /v1/limits); a failed ask is asked again. */
  private maxBatchAsked: Promise<number> | undefined;

  private readonly timeouts: Timeouts;

  constructor(
    private readonly key: () => string | undefined,
    timeouts: Partial<Timeouts> = {},
  ) {
    this.timeouts = { ...TIMEOUTS, ...timeouts };
  }

  me = () => this.get<Me>(`${V1}/me`);
  /**
   * The figures of a page of the queues (the overview reads the rows it shows), or of every
   * queue without `page`.
   */
  allStats = (page?: StatsQuery) => {
    if (page === undefined) return this.get<AllStats>(`${V1}/stats`);
    const query = new URLSearchParams({ offset: String(page.offset), limit: String(page.limit) });
    if (page.contains !== '') query.set('contains', page.contains);
    return this.get<AllStats>(`${V1}/stats?${query}`);
  };
  /** One queue's figures: what a page about one queue reads, rather than every queue's. */
  queueStats = (name: string) => this.get<QueueStats>(`${path(name)}/stats`);
  queue = (name: string) => this.get<QueueInfo>(path(name));
  /** The first `limit` entries of each list: the whole state of a long queue is megabytes. */
  inspect = (name: string, limit: number) =>
    this.get<InspectView>(`${path(name)}/inspect?limit=${limit}`);
  /** The oldest DELIVERIES_SHOWN deliveries in flight: a page, whose `next` says more follow. */
  deliveries = (name: string) =>
    this.get<DeliveryPage>(`${path(name)}/deliveries?limit=${DELIVERIES_SHOWN}`);
  /**
   * The oldest DEAD_LETTERS_SHOWN dead letters, without their payloads (a job's page reads its
   * own): a page, whose `next` says more follow. The page is a look-up, which takes no step
   * (R34): a job whose last lease ran out is dead-lettered by the queue's next step (R3, R13).
   * The queue's figures are read first, a step, so that the page lists it as the figures count
   * it and a redrive of every dead job takes it (as `leaseq dead list` does).
   */
  deadLetters = async (name: string) => {
    await this.queueStats(name);
    return this.get<DeadLetterPage>(
      `${path(name)}/dead-letters?limit=${DEAD_LETTERS_SHOWN}&payload=false`,
    );
  };
  job = (name: string, id: string) =>
    this.get<JobView>(`${path(name)}/jobs/${encodeURIComponent(id)}`);

  /** The most ids one redrive or purge may name on this server. */
  maxBatch = (): Promise<number> => {
    this.maxBatchAsked ??= this.get<{ maxBatch: number }>(`${V1}/limits`).then(
      (limits) => limits.maxBatch,
      (error: unknown) => {
        this.maxBatchAsked = undefined;
        throw error;
      },
    );
    return this.maxBatchAsked;
  };

  /** Redrives the ids named, or every dead job when `ids` is absent. */
  redrive = async (name: string, ids?: string[]) =>
    (await this.post<{ redriven: number }>(`${path(name)}/dead-letters/redrive`, { ids })).redriven;
  purge = async (name: string, ids?: string[]) =>
    (await this.post<{ purged: number }>(`${path(name)}/dead-letters/purge`, { ids })).purged;
  /**
   * Pauses the queue (R27: it hands out nothing) or resumes it, as `PATCH {"paused": …}` does;
   * answers whether it is paused now.
   */
  setPaused = async (name: string, paused: boolean) =>
    (await this.request<QueueInfo>('PATCH', path(name), { paused })).options.paused === true;
  /** Deletes the queue and every job in it; false when there was none (deleted meanwhile). */
  deleteQueue = async (name: string) =>
    (await this.request<{ deleted: boolean }>('DELETE', path(name))).deleted;

  private get<T>(url: string): Promise<T> {
    return this.request<T>('GET', url);
  }

  private post<T>(url: string, body: unknown): Promise<T> {
    return this.request<T>('POST', url, body);
  }

  private async request<T>(method: string, url: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    const key = this.key();
    if (key !== undefined) {
      // fetch would throw a TypeError; answered as the server answers a key it does not know.
      if (!isApiKey(key)) {
        throw new ApiError(401, 'UNAUTHENTICATED', `the API key cannot be sent: ${API_KEY_RULE}`);
      }
      headers.authorization = `Bearer ${key}`;
    }
    if (body !== undefined) headers['content-type'] = 'application/json';
    const ms = method === 'GET' ? this.timeouts.readMs : this.timeouts.actionMs;
    // A server that is stopped (not down) never answers: without a bound, the call never ends.
    const signal = AbortSignal.timeout(ms);
    // An action given up may still have been carried out; a read given up changed nothing
    // (the maxBatch an action asks first included: the action itself was never sent).
    const mayBeDone =
      method === 'GET' ? '' : '; it may still have been done, as the page shows once read again';
    const noAnswer = (error: unknown): Error =>
      signal.aborted
        ? new NoAnswerError(
            'TIMEOUT',
            `the server has not answered within ${ms / 1000} s${mayBeDone}`,
          )
        : error instanceof TypeError
          ? new NoAnswerError(
              'UNREACHABLE',
              'the server could not be reached (it may be down or restarting, or the network is out)',
            )
          : (error as Error);
    let response: Response;
    /** The body as JSON; undefined when it is none (empty, a page of HTML). */
    let answer: unknown;
    try {
      response = await fetch(url, {
        method,
        headers,
        cache: 'no-store',
        signal,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      answer = await response.json().catch((error: unknown) => {
        // The body cut short by the timeout is no answer; one that is not JSON is an answer.
        if (signal.aborted) throw error;
        return undefined;
      });
    } catch (error) {
      throw noAnswer(error);
    }
    if (response.ok && answer === undefined) {
      // Every answer of the API is JSON. A success without it is not the API's: drawn as one,
      // it would leave the page blank (no key's rights) or "Live" over figures never read again.
      throw notTheApi(response);
    }
    if (!response.ok) {
      const error = (answer as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new ApiError(
        response.status,
        error?.code ?? 'HTTP',
        error?.message ?? `${response.status} ${response.statusText}`,
      );
    }
    return answer as T;
  }
}

/** A success without the API's JSON, said with what answered instead. */
function notTheApi(response: Response): NoAnswerError {
  const type = response.headers.get('content-type')?.split(';')[0]?.trim() || 'no content type';
  const redirected = response.redirected ? `, redirected to ${response.url}` : '';
  return new NoAnswerError(
    'NOT_THE_API',
    `what answered (${response.status}, ${type}${redirected}) is not the API, whose answers are JSON: a proxy in front of the server may have answered instead, such as with its sign-in page`,
  );
}
