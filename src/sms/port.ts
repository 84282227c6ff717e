/**
 * The carrier port: send one text. Adapters never throw for a carrier answer; they
 * classify it: `retryable` (429, 5xx, timeouts, network) or permanent (bad number,
 * blocked, auth). Adapters: console.ts, twilio.ts, fast2sms.ts, failover.ts.
 */
import type { AttemptResult } from '../domain/delivery.js';

export interface OutgoingSms {
  to: string;
  body: string;
  /** the delivery key; sent as the carrier's idempotency key on every attempt */
  idempotencyKey: string;
}

export interface Carrier {
  readonly name: string;
  send(sms: OutgoingSms): Promise<AttemptResult>;
}
