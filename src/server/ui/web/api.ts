import type {
  AllStats,
  DeadLetterPage,
  InspectView,
  JobView,
  LiveDelivery,
  Me,
  QueueInfo,
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

const path = (queue: string) => `/v1/queues/${encodeURIComponent(queue)}`;

/** How many dead letters the dashboard reads and lists: the oldest, one page of the API's. */
export const DEAD_LETTERS_SHOWN = 1000;

/** The public HTTP API, with the API key as a Bearer header. */
export class Api {
  constructor(private readonly key: () => string | undefined) {}

  me = () => this.get<Me>('/v1/me');
  allStats = () => this.get<AllStats>('/v1/stats');
  queue = (name: string) => this.get<QueueInfo>(path(name));
  inspect = (name: string) => this.get<InspectView>(`${path(name)}/inspect`);
  deliveries = async (name: string) =>
    (await this.get<{ deliveries: LiveDelivery[] }>(`${path(name)}/deliveries`)).deliveries;
  /** The oldest DEAD_LETTERS_SHOWN dead letters: a page, whose `next` says more follow. */
  deadLetters = (name: string) =>
    this.get<DeadLetterPage>(`${path(name)}/dead-letters?limit=${DEAD_LETTERS_SHOWN}`);
  job = (name: string, id: string) =>
    this.get<JobView>(`${path(name)}/jobs/${encodeURIComponent(id)}`);

  /** Redrives the ids named, or every dead job when `ids` is absent. */
  redrive = async (name: string, ids?: string[]) =>
    (await this.post<{ redriven: number }>(`${path(name)}/dead-letters/redrive`, { ids })).redriven;
  purge = async (name: string, ids?: string[]) =>
    (await this.post<{ purged: number }>(`${path(name)}/dead-letters/purge`, { ids })).purged;

  private get<T>(url: string): Promise<T> {
    return this.request<T>('GET', url);
  }

  private post<T>(url: string, body: unknown): Promise<T> {
    return this.request<T>('POST', url, body);
  }

  private async request<T>(method: string, url: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    const key = this.key();
    if (key !== undefined) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(url, {
      method,
      headers,
      cache: 'no-store',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer: unknown = await response.json().catch(() => undefined);
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
