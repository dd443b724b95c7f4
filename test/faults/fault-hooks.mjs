/**
 * Fault hooks for a `leaseq serve` child of the fault suite, loaded with
 * `node --import test/faults/fault-hooks.mjs` and never part of the package. The parent writes a
 * JSON control file (LEASEQ_FAULT_CONTROL) and sends SIGUSR2; the hooks then apply it and
 * answer on stderr with `fault-hooks: applied {...}`.
 *
 * - `clockOffsetMs`: added to Date.now(), the only wall-clock read of leaseq (the broker's
 *   SystemClock), so the server's clock steps back or jumps forward while timers (monotonic)
 *   run on as before.
 * - `diskFull`: SQLite's max_page_count is held at the file's current size, so any write that
 *   needs a new page fails with SQLITE_FULL, as on a full disk; false lifts the cap.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const controlFile = process.env.LEASEQ_FAULT_CONTROL;
const realNow = Date.now;
let control = { clockOffsetMs: 0, diskFull: false };
Date.now = () => realNow() + control.clockOffsetMs;

const require = createRequire(new URL('../../package.json', import.meta.url));
const Database = require('better-sqlite3');
const databases = new Set();
const pragma = Database.prototype.pragma;
const UNCAPPED = 1073741823;

function capPages(db) {
  if (!db.open) return databases.delete(db);
  const pages = pragma.call(db, 'page_count', { simple: true });
  pragma.call(db, `max_page_count = ${control.diskFull ? pages : UNCAPPED}`);
}

Database.prototype.pragma = function (...args) {
  if (!databases.has(this)) {
    databases.add(this);
    if (control.diskFull) capPages(this);
  }
  return pragma.apply(this, args);
};

function apply() {
  if (controlFile === undefined) return;
  control = { clockOffsetMs: 0, diskFull: false, ...JSON.parse(readFileSync(controlFile, 'utf8')) };
  for (const db of databases) capPages(db);
  process.stderr.write(`fault-hooks: applied ${JSON.stringify(control)}\n`);
}

apply();
process.on('SIGUSR2', apply);
