import { vi } from 'vitest';
import { GroupCommitExecutor, type Work } from '../../src/engine/sql/executor.js';
import type { CommitKind } from '../../src/engine/sql/sql-connection.js';

/**
 * Runs `action` between two steps of the next call that takes steps (a redrive, purge or
 * moveJobs alone in its call on a SQL engine): before its step `step` (2: after its first) is
 * submitted, at a point its steps come to anyway. Arm it just before making that call, with no
 * other call under way: it counts the transactions submitted from then on, the call's steps
 * among them; those `action` submits are not counted. Restore with `vi.restoreAllMocks()`.
 */
export function beforeStep(step: number, action: () => Promise<void>): void {
  const submit = GroupCommitExecutor.prototype.submit;
  let submitted = 0;
  let acting = false;
  vi.spyOn(GroupCommitExecutor.prototype, 'submit').mockImplementation(function <T>(
    this: GroupCommitExecutor,
    work: Work<T>,
    kind?: CommitKind,
  ): Promise<T> {
    if (acting) return submit.call(this, work, kind) as Promise<T>;
    submitted += 1;
    if (submitted !== step) return submit.call(this, work, kind) as Promise<T>;
    acting = true;
    return action()
      .finally(() => {
        acting = false;
      })
      .then(() => submit.call(this, work, kind) as Promise<T>);
  });
}
