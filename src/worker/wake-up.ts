/**
 * One timer for the next sweep: the cron tick is the heartbeat and the safety net, this
 * fires at the next deadline so a due timer waits milliseconds, not up to a tick. It only
 * ever moves earlier (`atMost`): a later request while an earlier wake-up is set changes
 * nothing, so a request racing a re-read can never push a wake-up past a deadline.
 * Measured on a monotonic clock: a step of the wall clock (NTP, a VM resumed) neither
 * delays a wake-up nor makes one look later than it is.
 */
export class WakeUp {
  private timer: NodeJS.Timeout | undefined;
  private at = Number.POSITIVE_INFINITY;
  private stopped = false;

  constructor(
    private readonly fire: () => void,
    /** the furthest a wake-up is set ahead (the sweep lease): it then re-reads the next deadline */
    private readonly maxAheadMs: number,
    /** monotonic milliseconds; default performance.now */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Wake in `delayMs` (clamped to [0, maxAheadMs]) unless a wake-up is already set sooner. */
  atMost(delayMs: number): void {
    if (this.stopped) return;
    const ms = Math.max(0, Math.min(Number.isFinite(delayMs) ? delayMs : this.maxAheadMs, this.maxAheadMs));
    const at = this.now() + ms;
    if (this.timer && at >= this.at) return;
    if (this.timer) clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.at = Number.POSITIVE_INFINITY;
      this.fire();
    }, ms);
  }

  /** No more wake-ups; safe to call twice. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
