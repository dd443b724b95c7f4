/**
 * Most new jobs one statement of a publish writes where a statement is a round trip
 * (PostgreSQL). The rows of a statement travel as one JSON text, built in this process while
 * the transaction waits: all of a publish of 300,000 jobs in one took 3 s to build, which a
 * database's `idle_in_transaction_session_timeout` counts, and held the event loop for as long.
 */
export const PUBLISH_STEP = 5000;

/**
 * Most characters of ids and payload JSON text one step of a publish writes (one statement on
 * PostgreSQL; on SQLite, what it writes between two turns of the event loop), but never fewer
 * than one job. One text for every row of a publish stopped at the longest string this process
 * can make: 10,000 payloads of 100 KB failed with `RangeError: Invalid string length` after
 * 17 s, and PostgreSQL takes no message over 1 GB.
 */
export const PUBLISH_STEP_CHARS = 8 * 1024 * 1024;

/** The rows of a publish not yet written, gathered into steps that each write a bounded part. */
export class NewRowSteps<Row extends { readonly id: string; readonly payload: string | null }> {
  private rows: Row[] = [];
  private chars = 0;
  /** How many steps `take` handed out so far. */
  taken = 0;

  /** `rowsPerStep`: most rows of one step; `charsPerStep`: most characters, as PUBLISH_STEP_CHARS. */
  constructor(
    private readonly rowsPerStep: number,
    private readonly charsPerStep = PUBLISH_STEP_CHARS,
  ) {}

  /** Adds a row; true once the step it joined is full, to be written before the next row. */
  add(row: Row): boolean {
    this.rows.push(row);
    this.chars += row.id.length + (row.payload?.length ?? 0);
    return this.rows.length >= this.rowsPerStep || this.chars >= this.charsPerStep;
  }

  /** The rows added since the last step, as the next step (none: an empty array, no step). */
  take(): Row[] {
    const rows = this.rows;
    if (rows.length > 0) this.taken += 1;
    this.rows = [];
    this.chars = 0;
    return rows;
  }
}

/**
 * `rows` in consecutive steps of at most `rowsPerStep` rows and about `charsPerStep` characters
 * (as `charsOf` counts a row's text; a step ends with the row that reaches the bound), never
 * fewer than one row a step. Lazy: a row is taken from `rows` only as the step it joins is
 * made, so that what maps `rows` runs a step at a time.
 */
export function* rowSteps<Row>(
  rows: Iterable<Row>,
  rowsPerStep: number,
  charsOf: (row: Row) => number = () => 0,
  charsPerStep = PUBLISH_STEP_CHARS,
): Generator<Row[]> {
  let step: Row[] = [];
  let chars = 0;
  for (const row of rows) {
    step.push(row);
    chars += charsOf(row);
    if (step.length >= rowsPerStep || chars >= charsPerStep) {
      yield step;
      step = [];
      chars = 0;
    }
  }
  if (step.length > 0) yield step;
}
