/**
 * The carrier port: send one text. Adapters never throw for a carrier answer; they
 * classify it: `retryable` (429, 5xx, timeouts, network) or permanent (bad number,
 * blocked, auth). Adapters: console.ts, twilio.ts, fast2sms.ts, failover.ts.
 */
import { NOT_STARTED_LEASE, NOT_STARTED_UNWANTED, type AttemptResult } from '../domain/delivery.js';

export interface OutgoingSms {
  to: string;
  body: string;
  /** the delivery key, the same on every attempt (for logs and carriers that take a key) */
  idempotencyKey: string;
  /**
   * Set when this delivery was attempted before. A carrier that can look up what it
   * accepted checks whether an earlier attempt got through before sending again.
   */
  earlier?: EarlierAttempts;
  /** What bounds this attempt (the dispatcher's lease on the delivery); absent: nothing does. */
  gate?: SendGate;
}

/**
 * The bound of one attempt: the delivery's lease. A carrier asks `allows` before each request
 * it makes (a look-up page, the create, the second carrier's send) and makes no further one
 * when it says no, answering `notStarted`: once the lease may have lapsed another dispatcher
 * may claim the text, and nothing may leave here after that (no second SOS, no SOS after the
 * all-clear). A carrier that waited for its turn (pacing) asks `stillWanted` right before the
 * first request: the person may have checked in meanwhile.
 */
export interface SendGate {
  /** whether a request that may last up to `ms` (its own timeout) still ends inside the lease */
  allows(ms: number): boolean;
  /** false: the text must not go now (the lease is too short, or it was superseded meanwhile) */
  stillWanted(): Promise<boolean>;
}

/** The answer of an attempt that sent nothing because its gate said no (`reason`: `lease` or `unwanted`). */
export const notStarted = (carrier: string, reason: 'lease' | 'unwanted'): AttemptResult => ({
  ok: false,
  carrier,
  retryable: true,
  code: reason === 'lease' ? NOT_STARTED_LEASE : NOT_STARTED_UNWANTED,
});

export interface EarlierAttempts {
  /** how the last recorded attempt ended; absent when no outcome was recorded (crash, lapsed lease) */
  lastError?: string;
  /** no earlier attempt started before this (the delivery's creation) */
  since: Date;
}

export interface Carrier {
  readonly name: string;
  send(sms: OutgoingSms): Promise<AttemptResult>;
}
