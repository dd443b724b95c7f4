/**
 * Notices that this process's parent has exited: its parent pid changes (the orphan is adopted
 * by init or a subreaper). A wrapper that does not pass SIGTERM on to its child (the `sh -c`
 * that npm and npx run scripts in) leaves the server orphaned; the server then stops by itself.
 */
export class ParentWatch {
  private readonly parentPid: number;
  private timer: NodeJS.Timeout | undefined;
  private fired = false;

  constructor(
    private readonly onGone: () => void,
    private readonly readParentPid: () => number = () => process.ppid,
  ) {
    this.parentPid = readParentPid();
  }

  /** One check: calls `onGone` (once) when the parent is gone. Returns whether it is. */
  runOnce(): boolean {
    if (this.fired) return true;
    if (this.readParentPid() === this.parentPid) return false;
    this.fired = true;
    this.stop();
    this.onGone();
    return true;
  }

  /** Checks every `intervalMs` without keeping the process alive. */
  start(intervalMs = 500): this {
    this.timer ??= setInterval(() => this.runOnce(), intervalMs).unref();
    return this;
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** True when an npm script or npx started this process (npm sets npm_lifecycle_event for both). */
export function startedByNpm(env: NodeJS.ProcessEnv): boolean {
  return env.npm_lifecycle_event !== undefined;
}
