/**
 * A carrier that starts at most `perSecond` sends per second: starts are spaced at least
 * 1000/perSecond ms apart (a token bucket of depth one), so no window of one second ever
 * holds more than `perSecond` starts. Sends wait in order; the carrier's latency is not
 * counted (a slow answer does not slow the next start). Carriers publish such limits per
 * sender (Twilio: docs/sms.md); going over them gets 429s or queued, late texts.
 */
import type { AttemptResult } from '../domain/delivery.js';
import { notStarted, type Carrier, type OutgoingSms } from './port.js';

export interface Pacing {
  /** how many more sends could start within `ms` from now (those already waiting come first) */
  startableWithin(ms: number): number;
}

export class RateLimitedCarrier implements Carrier, Pacing {
  readonly name: string;
  private readonly intervalMs: number;
  private lastStart = Number.NEGATIVE_INFINITY;
  private readonly waiting: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly inner: Carrier,
    perSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(perSecond > 0)) throw new Error(`perSecond must be > 0, got ${perSecond}`);
    this.name = inner.name;
    this.intervalMs = 1000 / perSecond;
  }

  async send(sms: OutgoingSms): Promise<AttemptResult> {
    let waited = true;
    await new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.pump();
      if (this.waiting.length === 0) waited = false; // started in this turn: nothing changed while it waited
    });
    // a wait for the turn can be long: the lease may be nearly over, or the person checked in meanwhile
    if (waited && sms.gate && !(await sms.gate.stillWanted())) return notStarted(this.name, 'unwanted');
    return this.inner.send(sms);
  }

  startableWithin(ms: number): number {
    const wait = Math.max(0, this.lastStart + this.intervalMs - this.now());
    const slots = ms < wait ? 0 : 1 + Math.floor((ms - wait) / this.intervalMs);
    return Math.max(0, slots - this.waiting.length);
  }

  private pump(): void {
    if (this.timer) return;
    while (this.waiting.length > 0) {
      const wait = this.lastStart + this.intervalMs - this.now();
      if (wait > 0) {
        // a timer may fire a little early: pump() measures again and waits for the rest
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.pump();
        }, Math.ceil(wait));
        return;
      }
      this.lastStart = this.now();
      this.waiting.shift()?.();
    }
  }
}
