import { EngineBroker } from '../../src/broker/index.js';
import { ManualClock } from '../../src/index.js';
import { type EngineFactory, engineFactories, queueName } from '../conformance/engines.js';

/** The engines that take a caller's transactions: the SQL ones. */
export function sqlEngineFactories(): EngineFactory[] {
  return engineFactories().filter((factory) => factory.name !== 'memory');
}

/**
 * A broker on a ManualClock at 1,000 with a queue and a table of the caller's own (`columns`),
 * both named after `label`: what a transaction's work writes beside its acks. `rows` reads the
 * table's ids; `close` drops the table and the queue and closes the broker.
 */
export async function transactionTable(
  factory: EngineFactory,
  label: string,
  { visibility, columns = 'id TEXT PRIMARY KEY' }: { visibility: number; columns?: string },
) {
  const engine = await factory.open();
  const clock = new ManualClock(1_000);
  const broker = new EngineBroker(engine, { clock });
  const name = queueName(label);
  const queue = await broker.queue(name, { visibility });
  const table = `lq_${label}_${name.replace(/[^a-z0-9]/gi, '_')}`;
  await broker.transaction((tx) => tx.run(`CREATE TABLE ${table} (${columns})`));
  const rows = () => broker.transaction((tx) => tx.query(`SELECT id FROM ${table} ORDER BY id`));
  const close = async () => {
    await broker.transaction((tx) => tx.run(`DROP TABLE ${table}`));
    await broker.deleteQueue(name);
    await broker.close();
  };
  return { broker, queue, clock, name, table, rows, close };
}
