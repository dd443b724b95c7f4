import type { QueueHandle } from '../../src/engine/index.js';

/**
 * A broken queue, to show that the simulation's checkers catch what they are there for: an ack
 * whose token is stale completes the job's newer delivery instead of answering false (what a
 * queue that completes by job id, without a token check, does).
 */
export function unfencedAcks(handle: QueueHandle): QueueHandle {
  const jobOfToken = new Map<number, string>();
  return new Proxy(handle, {
    get(target, property, receiver) {
      if (property === 'reserve') {
        return async (...args: Parameters<QueueHandle['reserve']>) => {
          const deliveries = await target.reserve(...args);
          for (const delivery of deliveries) jobOfToken.set(delivery.token, delivery.id);
          return deliveries;
        };
      }
      if (property === 'ack') {
        return async (now: number, token: number) => {
          if (await target.ack(now, token)) return true;
          const id = jobOfToken.get(token);
          const current = (await target.inspect()).active.find((active) => active.id === id);
          return current === undefined ? false : target.ack(now, current.token);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
