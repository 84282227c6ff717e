/**
 * Failover carrier: a primary and a secondary behind one circuit breaker.
 *
 *   closed ──`threshold` consecutive retryable failures──► open ──`openMs`──► half-open
 *     ▲                                                      ▲                  │ one trial send
 *     └──────────────── trial answered (ok or permanent) ────┼──────────────────┤
 *                                                            └── trial retryable ┘
 *
 * Closed: every send goes to the primary; a retryable failure is returned as is (the
 * dispatcher retries later with backoff) unless it is the one that opens the circuit.
 * Open: sends go to the secondary. Half-open: one send tries the primary, the others keep
 * using the secondary until it answers. A send whose primary attempt failed retryably
 * while the circuit is open (or that opened it) is tried once on the secondary at once.
 *
 * A permanent failure from the primary is returned as is: it is about this message (a bad
 * or unsubscribed number), and the primary answered, so it also counts as a sign of life.
 *
 * Duplicates: the secondary cannot look up what the primary accepted, so a send that timed
 * out at the primary (and may have been accepted there) and then goes to the secondary can
 * reach the contact twice. For an SOS that is preferred to not reaching them.
 */
import { startedNothing, type AttemptResult } from '../domain/delivery.js';
import type { Carrier, OutgoingSms } from './port.js';

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface FailoverOptions {
  /** consecutive retryable primary failures that open the circuit; default 3 */
  threshold?: number;
  /** how long the circuit stays open before one trial send; default 30000 */
  openMs?: number;
  /** milliseconds clock; default Date.now */
  now?: () => number;
  /** told on every state change (for a metric or a log line); default: nothing */
  onStateChange?: (state: CircuitState) => void;
}

type Route = 'primary' | 'trial' | 'secondary';

export class FailoverCarrier implements Carrier {
  readonly name = 'failover';
  private readonly opts: Required<FailoverOptions>;
  private failures = 0;
  /** set while open or half-open: when the next trial may start */
  private openUntil: number | undefined;
  private trialInFlight = false;

  constructor(
    private readonly primary: Carrier,
    private readonly secondary: Carrier,
    opts: FailoverOptions = {},
  ) {
    this.opts = {
      threshold: opts.threshold ?? 3,
      openMs: opts.openMs ?? 30_000,
      now: opts.now ?? Date.now,
      onStateChange: opts.onStateChange ?? (() => {}),
    };
  }

  get state(): CircuitState {
    if (this.openUntil === undefined) return 'closed';
    return this.trialInFlight || this.opts.now() >= this.openUntil ? 'half_open' : 'open';
  }

  async send(sms: OutgoingSms): Promise<AttemptResult> {
    const route = this.route();
    if (route === 'secondary') return this.viaSecondary(sms);
    if (route === 'trial') {
      this.trialInFlight = true;
      this.opts.onStateChange('half_open');
    }
    let result: AttemptResult;
    try {
      result = await safeSend(this.primary, sms);
    } finally {
      if (route === 'trial') this.trialInFlight = false;
    }
    // the attempt's lease ran short before the primary made a request: not a sign of its health, and no time for the secondary either
    if (startedNothing(result)) return result;
    if (result.ok || !result.retryable) {
      this.close();
      return result;
    }
    this.failures += 1;
    if (route === 'trial') this.open();
    else if (this.openUntil === undefined && this.failures >= this.opts.threshold) this.open();
    return this.openUntil === undefined ? result : this.viaSecondary(sms);
  }

  private route(): Route {
    if (this.openUntil === undefined) return 'primary';
    if (this.trialInFlight || this.opts.now() < this.openUntil) return 'secondary';
    return 'trial';
  }

  private open(): void {
    this.openUntil = this.opts.now() + this.opts.openMs;
    this.opts.onStateChange('open');
  }

  private close(): void {
    this.failures = 0;
    if (this.openUntil === undefined) return;
    this.openUntil = undefined;
    this.opts.onStateChange('closed');
  }

  /**
   * The secondary's answer. Its refusals are not final while the primary is out: a number
   * it cannot serve (Fast2SMS: outside India) or its own account trouble must not turn an
   * SOS into a permanent failure, so they come back retryable and the dispatcher retries —
   * on the primary once the circuit closes.
   */
  private async viaSecondary(sms: OutgoingSms): Promise<AttemptResult> {
    const result = await safeSend(this.secondary, sms);
    return result.ok || result.retryable ? result : { ...result, retryable: true };
  }
}

/** Carriers classify instead of throwing; a throw is a bug, treated as a retryable failure. */
async function safeSend(carrier: Carrier, sms: OutgoingSms): Promise<AttemptResult> {
  try {
    return await carrier.send(sms);
  } catch {
    return { ok: false, carrier: carrier.name, retryable: true, code: 'carrier_threw' };
  }
}
