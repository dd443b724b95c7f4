import type { ReceivedDelivery } from '../../client/index.js';
import { type Command, EXIT } from '../command.js';
import { integerFlag, positionals } from '../flags.js';
import { formatTime } from '../format.js';
import { printJson, withClient } from '../remote.js';

export const receive: Command = {
  name: 'receive',
  summary: 'Reserve jobs and print them with the receipts that ack or nack them',
  usage: '<queue> [--max N] [--visibility MS] [--wait MS] [--auto-ack]',
  details: [
    '--max N           at most this many jobs (default 1)',
    '--visibility MS   lease length (default: the queue visibility)',
    '--wait MS         wait up to this long for a job (long poll; default 0)',
    '--auto-ack        remove each job as it is handed out (at most once: a job whose',
    '                  processing fails is lost; nothing to ack afterwards)',
    'Each job stays hidden until its lease ends; settle it with `leaseq ack` or `leaseq nack`.',
  ],
  options: {
    max: { type: 'string' },
    visibility: { type: 'string' },
    wait: { type: 'string' },
    'auto-ack': { type: 'boolean' },
  },
  remote: true,
  async run({ values, positionals: given, context }) {
    const [name] = positionals(given, ['queue']) as [string];
    const max = integerFlag(values, 'max', 1);
    const visibility = integerFlag(values, 'visibility', 1);
    const wait = integerFlag(values, 'wait', 0);
    const deliveries = await withClient(values, context, (client) =>
      client.handle(name).receiveWithReceipts({
        ...(max === undefined ? {} : { max }),
        ...(visibility === undefined ? {} : { visibility }),
        ...(wait === undefined ? {} : { wait }),
        ...(values['auto-ack'] === true ? { ack: 'auto' as const } : {}),
        signal: context.stop,
      }),
    );
    // An auto-acked job is gone already: no receipt or deadline to settle it by is shown.
    const autoAcked = values['auto-ack'] === true;
    // Stopped by a signal before a job came: not "no job ready" (a script would go on).
    const stopped = deliveries.length === 0 && context.stop.aborted;
    if (values.json)
      printJson(
        context,
        deliveries.map((delivery) => toJson(delivery, autoAcked)),
      );
    else if (stopped) context.stderr.write('stopped before a job came\n');
    else if (deliveries.length === 0) context.stderr.write('no job ready\n');
    else for (const delivery of deliveries) context.stdout.write(describe(delivery, autoAcked));
    return stopped ? EXIT.failed : EXIT.ok;
  },
};

/** As the API answers it: receipt and token first. */
function toJson(delivery: ReceivedDelivery, autoAcked: boolean) {
  const { receipt, token, deadline, ...rest } = delivery;
  return autoAcked ? { token, ...rest } : { receipt, token, deadline, ...rest };
}

function describe(delivery: ReceivedDelivery, autoAcked: boolean): string {
  const lease = autoAcked ? '  (removed: auto-ack)' : `  deadline ${formatTime(delivery.deadline)}`;
  return [
    `id ${delivery.id}  token ${delivery.token}  delivery ${delivery.deliveryCount}${lease}`,
    ...(autoAcked ? [] : [`  receipt ${delivery.receipt}`]),
    // A job published without one has none (JSON would print the word undefined).
    delivery.payload === undefined
      ? '  (no payload)'
      : `  payload ${JSON.stringify(delivery.payload)}`,
    '',
  ].join('\n');
}
