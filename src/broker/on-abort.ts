import { reportLater } from '../engine/report-later.js';

/** The listeners of one signal, behind the one listener it holds for them. */
interface Fanout {
  readonly listeners: Set<() => void>;
  readonly dispatch: () => void;
}

const fanouts = new WeakMap<AbortSignal, Fanout>();

/**
 * Calls `listener` once when `signal` aborts; returns its removal. However many calls wait on
 * one signal at once (a hundred receives sharing a consumer's stop signal, every parked receive
 * of a broker on its close), the signal holds one listener: more than ten on one EventTarget
 * makes Node warn of a leak, and each would be one more to walk at every add and remove.
 * Listeners run in the order they were added; one removed before its turn is not called, and
 * one that throws is reported like a listener of the signal itself and stops no other.
 * The caller checks `signal.aborted` first: on an aborted signal, `listener` is never called.
 */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  let fanout = fanouts.get(signal);
  if (fanout === undefined) {
    const listeners = new Set<() => void>();
    const dispatch = () => {
      fanouts.delete(signal);
      for (const each of listeners) {
        try {
          each();
        } catch (error) {
          reportLater(error);
        }
      }
      listeners.clear();
    };
    fanout = { listeners, dispatch };
    fanouts.set(signal, fanout);
    signal.addEventListener('abort', dispatch, { once: true });
  }
  const { listeners, dispatch } = fanout;
  const entry = () => listener();
  listeners.add(entry);
  return () => {
    if (!listeners.delete(entry) || listeners.size > 0) return;
    signal.removeEventListener('abort', dispatch);
    if (fanouts.get(signal)?.listeners === listeners) fanouts.delete(signal);
  };
}

/**
 * What `work` resolves to, or undefined once one of `signals` aborts (or one already had),
 * whichever comes first: `work` goes on either way, and a failure of it after the abort is
 * dropped here (never unhandled). For a caller that stops waiting (a worker closing, a receive
 * aborted, a client closing) for what it cannot cancel (a connection being opened, a read a
 * server may never answer).
 */
export function untilAborted<T>(
  work: Promise<T>,
  signals: AbortSignal | undefined | readonly (AbortSignal | undefined)[],
): Promise<T | undefined> {
  const watched = (Array.isArray(signals) ? signals : [signals]).filter(
    (signal): signal is AbortSignal => signal !== undefined,
  );
  if (watched.length === 0) return work;
  if (watched.some((signal) => signal.aborted)) {
    work.catch(() => undefined);
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const unwatch = () => {
      for (const each of unwatches) each();
    };
    const unwatches = watched.map((signal) =>
      onAbort(signal, () => {
        unwatch();
        work.catch(() => undefined);
        resolve(undefined);
      }),
    );
    work.then(
      (value) => {
        unwatch();
        resolve(value);
      },
      (error: unknown) => {
        unwatch();
        reject(error);
      },
    );
  });
}
