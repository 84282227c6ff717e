/**
 * Delivery rules. Pure. One delivery per (incident, contact, kind), keyed by
 * `deliveryKey`. Whether a retry after an ambiguous attempt can double-send depends
 * on the carrier: Twilio's adapter looks the message up first, Fast2SMS cannot.
 *
 *   pending ──claim──► sending ──ok──► sent ──receipt──► delivered
 *      ▲                  │ └─permanent─► failed              (receipt: undelivered → failed)
 *      └──retryable, attempts left──┘ └─retryable, no attempts left─► dead
 */
export const DELIVERY_STATUSES = ['pending', 'sending', 'sent', 'delivered', 'failed', 'dead'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** `sos`: the alert; `all_clear`: the follow-up when the person checks in after the SOS. */
export type DeliveryKind = 'sos' | 'all_clear';

export interface Delivery {
  /** `incidentId:contactId` for the SOS, `incidentId:contactId:all_clear` for the follow-up */
  key: string;
  incidentId: string;
  userId: string;
  contactId: string;
  contactName: string;
  phone: string;
  kind: DeliveryKind;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  leaseUntil?: Date;
  carrier?: string;
  providerMessageId?: string;
  lastError?: string;
  createdAt: Date;
  updatedAt: Date;
  /** W3C traceparent of the escalation (or request) that queued it: each send continues that trace */
  traceparent?: string;
}

export const deliveryKey = (incidentId: string, contactId: string, kind: DeliveryKind): string =>
  kind === 'sos' ? `${incidentId}:${contactId}` : `${incidentId}:${contactId}:${kind}`;

/** The result of one carrier attempt, in domain words. */
export type AttemptResult =
  | { ok: true; carrier: string; providerMessageId: string }
  | { ok: false; carrier: string; retryable: boolean; code: string };

export interface RetryPolicy {
  maxAttempts: number;
  baseMs: number;
  capMs: number;
}

/** Exponential backoff with full jitter: uniform in [0, min(cap, base·2^(attempt-1))]. */
export function backoffMs(policy: RetryPolicy, attempt: number, random: () => number): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/** What to record after attempt number `attempt` (1-based) ended with `result`. */
export type Outcome =
  | { status: 'sent'; providerMessageId: string }
  | { status: 'failed'; error: string }
  | { status: 'dead'; error: string }
  | { status: 'pending'; error: string; retryInMs: number };

export function outcomeOf(policy: RetryPolicy, attempt: number, result: AttemptResult, random: () => number): Outcome {
  if (result.ok) return { status: 'sent', providerMessageId: result.providerMessageId };
  if (!result.retryable) return { status: 'failed', error: result.code };
  if (attempt >= policy.maxAttempts) return { status: 'dead', error: result.code };
  return { status: 'pending', error: result.code, retryInMs: backoffMs(policy, attempt, random) };
}

const RANK: Record<DeliveryStatus, number> = { pending: 0, sending: 1, sent: 2, failed: 3, dead: 3, delivered: 4 };

/**
 * Carrier receipts move status only forward: a late `sent` never overwrites
 * `delivered`, a duplicate changes nothing. Returns the allowed prior states.
 */
export function receiptFrom(to: 'sent' | 'delivered' | 'failed'): DeliveryStatus[] {
  return DELIVERY_STATUSES.filter((s) => RANK[s] < RANK[to] && s !== 'dead' && s !== 'failed' && s !== 'pending');
}
