import { NotFoundError } from '../../core/index.js';
import { newSecretValue, type StoredSecret } from '../secrets.js';
import type { SqlConnection } from './sql-connection.js';

interface SecretRow {
  current: string;
  previous: string | null;
  previous_until: number | string | null;
}

/** The named secret, made at the first read; two processes making it at once agree on one. */
export async function readOrCreateSecret(
  connection: SqlConnection,
  name: string,
): Promise<StoredSecret> {
  await connection.run(
    'INSERT INTO leaseq_secrets (name, current) VALUES (?, ?) ON CONFLICT (name) DO NOTHING',
    [name, newSecretValue()],
  );
  const [row] = await connection.query<SecretRow>(
    'SELECT current, previous, previous_until FROM leaseq_secrets WHERE name = ?',
    [name],
  );
  if (row === undefined) throw new Error(`secret ${name} vanished while it was read`);
  return fromRow(row);
}

/**
 * A new current value; the old one stays accepted until `previousUntil` (ms). A secret not
 * kept yet is not made: NotFoundError (nobody signed with it, so there is nothing to replace).
 */
export async function rotateStoredSecret(
  connection: SqlConnection,
  name: string,
  previousUntil: number,
): Promise<StoredSecret> {
  const changed = await connection.run(
    'UPDATE leaseq_secrets SET previous = current, previous_until = ?, current = ? WHERE name = ?',
    [previousUntil, newSecretValue(), name],
  );
  if (changed === 0) throw new NotFoundError(`no secret ${name} is kept in this storage`);
  return readOrCreateSecret(connection, name);
}

function fromRow(row: SecretRow): StoredSecret {
  return {
    current: row.current,
    ...(row.previous === null || row.previous_until === null
      ? {}
      : { previous: row.previous, previousUntil: Number(row.previous_until) }),
  };
}
