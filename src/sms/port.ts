/**
 * The carrier port: send one text. Adapters never throw for a carrier answer; they
 * classify it: `retryable` (429, 5xx, timeouts, network) or permanent (bad number,
 * blocked, auth). Adapters: console.ts, twilio.ts, fast2sms.ts, failover.ts.
 */
import type { AttemptResult } from '../domain/delivery.js';

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
}

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
