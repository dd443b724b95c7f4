import { NotFoundError } from '../core/index.js';

/**
 * The answer of a call of a pinned handle (Engine.pinnedHandle) whose queue was deleted: its
 * queue is gone, whether or not another was made under its name since.
 */
export function pinnedQueueGone(name: string): NotFoundError {
  return new NotFoundError(
    `queue ${name} was deleted (a queue made under its name since is another queue)`,
  );
}
