/**
 * The store's clock for the MongoDB store: the server's `hello.localTime`, so replicas
 * whose own clocks are skewed agree on what is due.
 *
 * Asking the server on every call would add a round trip to every transition, so the
 * clock keeps the server time read at the last sync and advances it with the local
 * MONOTONIC clock (performance.now(), immune to wall-clock steps), re-syncing once
 * `refreshMs` has passed (0 = ask the server every time). The estimate is off by at most
 * half a round trip plus the drift of the local oscillator over `refreshMs` — a few ms.
 * The values handed out never go backwards within a process, so `updatedAt` written
 * after a read of `now()` is never earlier than that read (the "since" contract).
 */
export class ServerClock {
  private base: { serverMs: number; perfMs: number } | undefined;
  private syncing: Promise<void> | undefined;
  private last = 0;

  constructor(
    /** one round trip: the server's current time */
    private readonly serverTime: () => Promise<Date>,
    private readonly refreshMs: number,
  ) {}

  async now(): Promise<Date> {
    if (!this.base || performance.now() - this.base.perfMs >= this.refreshMs) await this.sync();
    const base = this.base;
    if (!base) throw new Error('server clock: no sync');
    const t = Math.max(this.last, Math.round(base.serverMs + (performance.now() - base.perfMs)));
    this.last = t;
    return new Date(t);
  }

  /** Concurrent callers share one `hello`. */
  private sync(): Promise<void> {
    this.syncing ??= (async () => {
      const before = performance.now();
      const server = await this.serverTime();
      const after = performance.now();
      // the server read its clock somewhere in [before, after]; assume the midpoint
      this.base = { serverMs: server.getTime(), perfMs: (before + after) / 2 };
    })().finally(() => {
      this.syncing = undefined;
    });
    return this.syncing;
  }
}
