import { describe, expect, it } from 'vitest';
import { ClosedError, StorageUnavailableError } from '../../src/core/index.js';
import { GroupCommitExecutor } from '../../src/engine/sql/executor.js';
import { recordingConnection } from './recording-connection.js';

const abandoned = () => new ClosedError('closed while this call waited: nothing of it was written');

describe('group commit: a close that cannot wait', () => {
  it('the calls of a batch split after a failure do not run once abandoned', async () => {
    const log: string[] = [];
    const executor = new GroupCommitExecutor(async () => ({
      connection: recordingConnection(log),
      release: () => {},
    }));
    // Cuts the call that waits, as the storage's abandon does to its connection.
    let cut: (error: Error) => void = () => {};
    let runs = 0;
    const held = executor.submit(async () => {
      runs += 1;
      log.push(`held ${runs}`);
      // The batch's first run goes through; run alone after the split, it waits (a lock).
      if (runs === 1) return 'held';
      await new Promise((_resolve, reject) => {
        cut = reject;
      });
    });
    const faulty = executor.submit(async () => {
      log.push('faulty');
      throw new Error('not a LeaseqError: the batch rolls back and is split');
    });
    const behind = executor.submit(async () => {
      log.push('behind');
      return 'behind';
    });
    const outcomes = Promise.allSettled([held, faulty, behind]);
    while (runs < 2) await new Promise((resolve) => setImmediate(resolve));
    const error = abandoned();
    executor.abandon(error, new StorageUnavailableError('cut while committing'));
    cut(new Error('connection cut'));
    const [first, second, third] = await outcomes;
    expect(first).toEqual({ status: 'rejected', reason: error });
    expect(second).toEqual({ status: 'rejected', reason: error });
    expect(third).toEqual({ status: 'rejected', reason: error });
    // The calls after the cut one did not start alone: the faulty one ran in the batch only.
    expect(log).toEqual(['begin', 'held 1', 'faulty', 'rollback', 'begin', 'held 2', 'rollback']);
    await executor.drain();
  });

  it('a batch whose connection comes after the abandon does not run', async () => {
    const log: string[] = [];
    let connected: () => void = () => {};
    const released: string[] = [];
    const executor = new GroupCommitExecutor(async () => {
      await new Promise<void>((resolve) => {
        connected = resolve;
      });
      return { connection: recordingConnection(log), release: () => released.push('released') };
    });
    const call = executor.submit(async () => {
      log.push('ran');
      return 'ran';
    });
    const outcome = call.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    // The batch waits for its connection.
    await new Promise((resolve) => setImmediate(resolve));
    const error = abandoned();
    executor.abandon(error, new StorageUnavailableError('cut while committing'));
    connected();
    expect(await outcome).toBe(error);
    expect(log).toEqual([]);
    expect(released).toEqual(['released']);
    await executor.drain();
  });

  it('a batch whose connection fails after the abandon fails with the abandon error', async () => {
    let failConnecting: (error: Error) => void = () => {};
    const executor = new GroupCommitExecutor(
      () =>
        new Promise<never>((_resolve, reject) => {
          failConnecting = reject;
        }),
    );
    const outcome = executor
      .submit(async () => 'ran')
      .then(
        () => 'resolved',
        (error: unknown) => error,
      );
    await new Promise((resolve) => setImmediate(resolve));
    const error = abandoned();
    executor.abandon(error, new StorageUnavailableError('cut while committing'));
    // The storage cut the connection while it was being readied: none of the calls ran.
    failConnecting(new Error('connection cut'));
    expect(await outcome).toBe(error);
    await executor.drain();
  });
});
