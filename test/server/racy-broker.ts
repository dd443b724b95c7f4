import type { Broker, Queue, ReceiveOptions } from '../../src/broker/index.js';
import { withWrappedQueues } from './helpers.js';

/**
 * A broker whose waiting receives answer only once the request's signal says the client left,
 * and then reserve what is ready: what a receive woken by a publish at that moment would
 * answer. Makes certain the race of a long poll taking jobs just as its client goes away.
 * `parked` is called as a receive starts to wait.
 */
export function racyBroker(real: Broker, parked: () => void): Broker {
  return withWrappedQueues(
    real,
    (queue: Queue): Queue =>
      new Proxy(queue, {
        get(target, key) {
          if (key === 'receive') {
            return async (options: ReceiveOptions = {}) => {
              const { signal, wait = 0, ...reserve } = options;
              if (signal === undefined || wait === 0) return target.receive(options);
              parked();
              await new Promise<void>((resolve) => {
                if (signal.aborted) resolve();
                else signal.addEventListener('abort', () => resolve(), { once: true });
              });
              return target.receive(reserve);
            };
          }
          const value = Reflect.get(target, key, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }),
  );
}
