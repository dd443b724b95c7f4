import { CodedError } from '../core/index.js';

/** The errors only leaseq/testing raises, to play faults against a worker under test. */
export type TestingErrorCode = 'INJECTED_FAULT' | 'PROCESS_CRASHED';

/** A fault the testing harness injected (a lost request, a failed renewal). */
export class InjectedFaultError extends CodedError<TestingErrorCode> {
  readonly code = 'INJECTED_FAULT' as const;
}

/** The testing harness "killed" the process: it makes no more calls. */
export class ProcessCrashedError extends CodedError<TestingErrorCode> {
  readonly code = 'PROCESS_CRASHED' as const;
}
