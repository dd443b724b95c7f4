import { type Counters, newCounters } from '../../core/counters.js';
import { foldDeadLetterCounts } from '../../core/dead-letter-kinds.js';
import { NotFoundError, type QueueOptions, type ResolvedQueueOptions } from '../../core/index.js';
import type { BatchContext } from './executor.js';
import type { RankedBands } from './ready-bands.js';
import type { SqlConnection, SqlDialect } from './sql-connection.js';

/** A queue's row: its options, time (the `clock` column), counters and gauges, loaded once per transaction. */
export interface QueueRow {
  name: string;
  options: ResolvedQueueOptions;
  queueTime: number;
  nextToken: number;
  nextSeq: number;
  nextSession: number;
  nextGeneratedId: number;
  /** Ready positions are exactly readyHead..readyTail: the front is readyHead. */
  readyHead: number;
  readyTail: number;
  /** The ready positions of priorities above 0 (see ready-bands.ts); null while unused. */
  bands: RankedBands | null;
  deadSeq: number;
  /** A lower bound of the next tick at which time alone changes the queue (R3). */
  nextEventAt: number;
  ready: number;
  delayed: number;
  active: number;
  dead: number;
  /** Grouped jobs waiting behind an earlier member of their group (R24). */
  waiting: number;
  sessions: number;
  counters: Counters;
  /** R30: a job was published into the queue with an expiresAt (never unset). */
  jobExpiry: boolean;
  /** An id of the generated form came from a caller or another queue (never unset). */
  generatedFormSeen: boolean;
  /**
   * Which making of the queue under its name this is (never changed): a queue made again after
   * a delete has a greater one. A call that takes steps ends where it changed (see inSteps).
   */
  incarnation: number;
}

/**
 * R30: whether jobs of the queue may expire (a retention, or jobs published with an
 * expiresAt), so that time passing looks for expired jobs. A queue without either never does.
 */
export function expiryInUse(q: QueueRow): boolean {
  return q.jobExpiry || q.options.retention !== undefined;
}

interface StoredRow {
  name: string;
  options: string;
  clock: number;
  next_token: number;
  next_seq: number;
  next_session: number;
  next_generated_id: number;
  ready_head: number;
  ready_tail: number;
  ready_bands: string | null;
  waiting_count: number;
  dead_seq: number;
  next_event_at: number | null;
  ready_count: number;
  delayed_count: number;
  active_count: number;
  dead_count: number;
  session_count: number;
  counters: string;
  job_expiry: number;
  generated_form_seen: number;
  incarnation: number;
}

const COLUMNS =
  'name, options, clock, next_token, next_seq, next_session, next_generated_id, ready_head, ready_tail, dead_seq, next_event_at, ready_count, delayed_count, active_count, dead_count, session_count, counters, ready_bands, waiting_count, job_expiry, generated_form_seen, incarnation';

/** Options as JSON: Infinity is stored as null. */
export function encodeOptions(options: ResolvedQueueOptions): string {
  return JSON.stringify(options, (_key, value) =>
    value === Number.POSITIVE_INFINITY ? null : value,
  );
}

export function decodeOptions(text: string): ResolvedQueueOptions {
  const raw = JSON.parse(text) as Record<string, number | string | null>;
  const decoded: Record<string, number | string> = {};
  for (const [key, value] of Object.entries(raw)) decoded[key] = value ?? Number.POSITIVE_INFINITY;
  return decoded as unknown as ResolvedQueueOptions;
}

/**
 * Queue rows' options decoded once per stored text, frozen and shared: a row's options are
 * replaced whole, never changed in place, so a save writes the text it was loaded from.
 */
const optionsByText = new Map<string, ResolvedQueueOptions>();
const textOfOptions = new WeakMap<ResolvedQueueOptions, string>();
/** Enough for every queue of a busy server; beyond it the memo starts over. */
const OPTIONS_MEMO_LIMIT = 1024;

function decodeRowOptions(text: string): ResolvedQueueOptions {
  let options = optionsByText.get(text);
  if (options === undefined) {
    if (optionsByText.size >= OPTIONS_MEMO_LIMIT) optionsByText.clear();
    options = Object.freeze(decodeOptions(text));
    optionsByText.set(text, options);
    textOfOptions.set(options, text);
  }
  return options;
}

function encodeRowOptions(options: ResolvedQueueOptions): string {
  return textOfOptions.get(options) ?? encodeOptions(options);
}

export const INFINITY_AS_NULL = (value: number): number | null =>
  value === Number.POSITIVE_INFINITY ? null : value;

export const NULL_AS_INFINITY = (value: number | null): number =>
  value === null ? Number.POSITIVE_INFINITY : value;

/** Loads (once per transaction, locking it) the row of queue `name`; saved before commit. */
export async function loadQueueRow(
  connection: SqlConnection,
  batch: BatchContext,
  dialect: SqlDialect,
  name: string,
): Promise<QueueRow> {
  const key = `queue:${name}`;
  const cached = batch.cache.get(key) as QueueRow | undefined;
  if (cached !== undefined) return cached;
  const [stored] = await connection.query<StoredRow>(
    dialect.loadQueueRow?.(COLUMNS) ??
      `SELECT ${COLUMNS} FROM leaseq_queues WHERE name = ?${dialect.lockRow}`,
    [name],
  );
  if (stored === undefined) throw new NotFoundError(`queue ${name} does not exist`);
  const row = fromStored(stored);
  batch.cache.set(key, row);
  const loadedNextToken = row.nextToken;
  batch.beforeCommit(async (conn) => {
    // Deleted by a later call of the batch (forgetQueueRow): saved then, and never over a
    // queue made again under the name.
    if (batch.cache.get(key) !== row) return;
    await saveQueueRow(conn, row);
    if (row.nextToken !== loadedNextToken) {
      await dialect.fenceTokens?.(conn, batch, row.name, row.nextToken);
    }
  });
  return row;
}

/**
 * The rows of those of `names` that exist, as they stand: read for figures, neither locked nor
 * saved (see loadQueueRow for a row a step changes).
 */
export async function readQueueRows(
  connection: SqlConnection,
  dialect: SqlDialect,
  names: readonly string[],
): Promise<QueueRow[]> {
  const list = dialect.jsonList('text');
  const stored = await connection.query<StoredRow>(
    dialect.readQueueRows?.(COLUMNS, list) ??
      `SELECT ${COLUMNS} FROM leaseq_queues WHERE name IN ${list}`,
    [JSON.stringify(names)],
  );
  return stored.map(fromStored);
}

/**
 * Before the queue `name` is deleted: a row an earlier call of the batch loaded is saved now,
 * so that the counters the delete keeps for the name (R6) include the tokens that call handed
 * out, and is dropped from the batch, so that its save before the commit does not write it over
 * a queue made again under the name in the same batch.
 */
export async function forgetQueueRow(
  connection: SqlConnection,
  batch: BatchContext,
  dialect: SqlDialect,
  name: string,
): Promise<void> {
  const key = `queue:${name}`;
  const row = batch.cache.get(key) as QueueRow | undefined;
  if (row === undefined) return;
  batch.cache.delete(key);
  await saveQueueRow(connection, row, true);
  await dialect.fenceTokens?.(connection, batch, name, row.nextToken);
}

function fromStored(stored: StoredRow): QueueRow {
  return {
    name: stored.name,
    options: decodeRowOptions(stored.options),
    queueTime: stored.clock,
    nextToken: stored.next_token,
    nextSeq: stored.next_seq,
    nextSession: stored.next_session,
    nextGeneratedId: stored.next_generated_id,
    readyHead: stored.ready_head,
    readyTail: stored.ready_tail,
    bands: stored.ready_bands === null ? null : (JSON.parse(stored.ready_bands) as RankedBands),
    deadSeq: stored.dead_seq,
    nextEventAt: NULL_AS_INFINITY(stored.next_event_at),
    ready: stored.ready_count,
    delayed: stored.delayed_count,
    active: stored.active_count,
    dead: stored.dead_count,
    waiting: stored.waiting_count,
    sessions: stored.session_count,
    counters: loadCounters(stored.counters),
    jobExpiry: stored.job_expiry !== 0,
    generatedFormSeen: stored.generated_form_seen !== 0,
    incarnation: stored.incarnation,
  };
}

/** Counters as stored; dead letters counted by free-text reason (before R17's kinds) folded. */
function loadCounters(text: string): Counters {
  // Counters added later start at 0 for rows stored before them.
  const counters = { ...newCounters(), ...(JSON.parse(text) as Partial<Counters>) } as Counters;
  counters.deadLetters = foldDeadLetterCounts(counters.deadLetters);
  return counters;
}

/**
 * Writes the row: with the commit (where the connection defers statements whose result nobody
 * reads), or at once with `now`, before statements that follow it.
 */
async function saveQueueRow(connection: SqlConnection, row: QueueRow, now = false): Promise<void> {
  const sql = `UPDATE leaseq_queues SET options = ?, clock = ?, next_token = ?, next_seq = ?, next_session = ?,
       next_generated_id = ?, ready_head = ?, ready_tail = ?, dead_seq = ?, next_event_at = ?,
       ready_count = ?, delayed_count = ?, active_count = ?, dead_count = ?, session_count = ?,
       counters = ?, ready_bands = ?, waiting_count = ?, job_expiry = ?, generated_form_seen = ?
     WHERE name = ?`;
  const params = [
    encodeRowOptions(row.options),
    row.queueTime,
    row.nextToken,
    row.nextSeq,
    row.nextSession,
    row.nextGeneratedId,
    row.readyHead,
    row.readyTail,
    row.deadSeq,
    INFINITY_AS_NULL(row.nextEventAt),
    row.ready,
    row.delayed,
    row.active,
    row.dead,
    row.sessions,
    JSON.stringify(row.counters),
    row.bands === null ? null : JSON.stringify(row.bands),
    row.waiting,
    row.jobExpiry ? 1 : 0,
    row.generatedFormSeen ? 1 : 0,
    row.name,
  ];
  if (now) await connection.run(sql, params);
  else await connection.runBeforeCommit(sql, params);
}

/**
 * Inserts the row of a new queue; false when it already exists. A name used before continues
 * its token and session counters (R6: never reused), and its making is one more than that of
 * the queue deleted last under the name.
 */
export async function insertQueueRow(
  connection: SqlConnection,
  name: string,
  options: ResolvedQueueOptions,
): Promise<boolean> {
  const changed = await connection.run(
    `INSERT INTO leaseq_queues (${COLUMNS})
     SELECT ?, ?, 0, COALESCE(MAX(floor.next_token), 1), 1, COALESCE(MAX(floor.next_session), 1),
       1, 1, 0, 0, NULL, 0, 0, 0, 0, 0, ?, NULL, 0, 0, 0, COALESCE(MAX(floor.incarnation), 0) + 1
     FROM (SELECT next_token, next_session, incarnation FROM leaseq_counter_floors WHERE name = ?)
       AS floor
     WHERE TRUE
     ON CONFLICT (name) DO NOTHING`,
    [name, encodeOptions(options), JSON.stringify(newCounters()), name],
  );
  return changed > 0;
}

/**
 * A queue's options as this transaction sees them: those of the row an earlier call of the
 * batch loaded (and may have changed, saved only before the commit), else the stored ones.
 */
export async function readQueueOptions(
  connection: SqlConnection,
  batch: BatchContext,
  name: string,
): Promise<ResolvedQueueOptions | undefined> {
  const cached = batch.cache.get(`queue:${name}`) as QueueRow | undefined;
  if (cached !== undefined) return cached.options;
  const [row] = await connection.query<{ options: string }>(
    'SELECT options FROM leaseq_queues WHERE name = ?',
    [name],
  );
  return row === undefined ? undefined : decodeOptions(row.options);
}

export type { QueueOptions };
