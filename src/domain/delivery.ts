/**
 * Delivery rules. Pure. One delivery per (incident, contact, kind), keyed by
 * `deliveryKey`. Whether a retry after an ambiguous attempt can double-send depends
 * on the carrier: Twilio's adapter looks the message up first, Fast2SMS cannot.
 *
 *   pending ──claim──► sending ──ok──► sent ──receipt──► delivered
 *    ▲  │               │ ├─permanent─► failed              (receipt: undelivered → failed)
 *    │  │               │ ├─retryable, no attempts left─► dead
 *    └──┼───────────────┘ └─after "I'm safe", not sent─► superseded
 *       │  retryable, attempts left
 *       └─"I'm safe" before it went out─► superseded
 *       └─a moderator cancels it (lastError `cancelled_by_moderator`)─► superseded
 *
 *   dead | failed ──a moderator resends it (attempts reset)──► pending
 *
 * A carrier receipt is about one message, so it moves a delivery only while that message is
 * its current one (`providerMessageId`, set by the attempt that sent it): a resend moves the
 * id to `earlierMessageIds`, and a receipt that arrives before its attempt is recorded is kept
 * (at most EARLY_RECEIPT_KEEP_MS) and applied by the write that records it.
 *
 * `superseded` is final: after "I'm safe" an SOS that has not gone out is not sent, and an
 * all-clear whose SOS never reached the contact is not sent either.
 */
import { sosAudience, type Contact } from './contact.js';

export const DELIVERY_STATUSES = ['pending', 'sending', 'sent', 'delivered', 'failed', 'dead', 'superseded'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * `sos`: the alert; `all_clear`: the follow-up when the person checks in after the SOS;
 * `moved`: the one follow-up when the person moved far from where the SOS said.
 */
export type DeliveryKind = 'sos' | 'all_clear' | 'moved';

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
  /** the carrier's id of the message the current attempts sent (receipts about it move this delivery) */
  providerMessageId?: string;
  /** ids of messages sent before a moderator's resend, oldest first: their receipts move nothing */
  earlierMessageIds?: string[];
  lastError?: string;
  /** an attempt ended without knowing whether the carrier took it (timeout, lapsed lease): the contact may have the text */
  maybeAccepted?: boolean;
  createdAt: Date;
  updatedAt: Date;
  /** W3C traceparent of the escalation (or request) that queued it: each send continues that trace */
  traceparent?: string;
  /** how many times a moderator sent it again after it was dead or failed (absent: never) */
  resends?: number;
  /** when retention masked the number and removed the text (absent: not yet) */
  redactedAt?: Date;
}

export const deliveryKey = (incidentId: string, contactId: string, kind: DeliveryKind): string =>
  kind === 'sos' ? `${incidentId}:${contactId}` : `${incidentId}:${contactId}:${kind}`;

/** Who a text goes to: a contact as a delivery names them (a `Delivery` is one too). */
export interface Recipient {
  contactId: string;
  contactName: string;
  phone: string;
}

export const recipientOf = (c: Contact): Recipient => ({ contactId: c.id, contactName: c.name, phone: c.phone });

/** A delivery about to be stored: what the store's `addDeliveries` takes. */
export interface NewDelivery extends Recipient {
  key: string;
  kind: DeliveryKind;
  body: string;
  /** W3C traceparent to store with the delivery (each send continues that trace) */
  traceparent?: string;
  /** a cap held it back: stored `superseded` with this `lastError` (`held_<reason>`), never sent */
  held?: string;
}

/**
 * The one way a delivery is made: text `kind` of incident `incidentId` to `to`, keyed by
 * `deliveryKey` (so a repeat of the same text to the same contact is the same record).
 */
export function newDelivery(
  incidentId: string,
  to: Recipient,
  kind: DeliveryKind,
  body: string,
  extra: { traceparent?: string; held?: string } = {},
): NewDelivery {
  return {
    key: deliveryKey(incidentId, to.contactId, kind),
    contactId: to.contactId,
    contactName: to.contactName,
    phone: to.phone,
    kind,
    body,
    ...(extra.traceparent === undefined ? {} : { traceparent: extra.traceparent }),
    ...(extra.held === undefined ? {} : { held: extra.held }),
  };
}

/**
 * The SOS deliveries of an incident: one per contact, each with its own text (their language); a
 * contact who declined or opted out gets none sent: theirs is recorded held, with the reason.
 */
export function sosDeliveries(incidentId: string, to: Contact[], body: (c: Contact) => string, traceparent?: string): NewDelivery[] {
  const { reach, withheld } = sosAudience(to);
  return [
    ...reach.map((c) => newDelivery(incidentId, recipientOf(c), 'sos', body(c), { traceparent })),
    ...withheld.map(({ contact, held }) => newDelivery(incidentId, recipientOf(contact), 'sos', body(contact), { traceparent, held })),
  ];
}

/**
 * Codes of an attempt that made no carrier request at all: its lease ran too short for one
 * to start and end inside it, or the text was no longer wanted when its turn came.
 */
export const NOT_STARTED_LEASE = 'not_started_lease';
export const NOT_STARTED_UNWANTED = 'not_started_unwanted';
export const startedNothing = (r: AttemptResult): boolean => !r.ok && (r.code === NOT_STARTED_LEASE || r.code === NOT_STARTED_UNWANTED);

/** The result of one carrier attempt, in domain words. */
export type AttemptResult =
  { ok: true; carrier: string; providerMessageId: string } | { ok: false; carrier: string; retryable: boolean; code: string };

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

const RANK: Record<DeliveryStatus, number> = { pending: 0, sending: 1, sent: 2, failed: 3, dead: 3, superseded: 3, delivered: 4 };

/**
 * Carrier receipts move status only forward: a late `sent` never overwrites
 * `delivered`, a duplicate changes nothing. Returns the allowed prior states.
 */
export function receiptFrom(to: 'sent' | 'delivered' | 'failed'): DeliveryStatus[] {
  return DELIVERY_STATUSES.filter((s) => RANK[s] < RANK[to] && s !== 'dead' && s !== 'failed' && s !== 'pending' && s !== 'superseded');
}

/**
 * How long a receipt for a message no attempt has recorded yet is kept, waiting for that
 * attempt's outcome to be written (it usually comes within seconds; a receipt for a message
 * resent since, or never ours, just expires).
 */
export const EARLY_RECEIPT_KEEP_MS = 24 * 60 * 60 * 1000;

/** States a delivery never leaves by sending (receipts aside). */
export const FINAL_DELIVERY: readonly DeliveryStatus[] = ['sent', 'delivered', 'failed', 'dead', 'superseded'];

/**
 * Whether the carrier may have taken a message after this attempt result. A carrier
 * answer (an HTTP status, a carrier error code, a refused connection) is definite;
 * a timeout, a reset or an unreadable answer is not: the message may be on its way.
 */
export function attemptMayHaveBeenAccepted(result: AttemptResult): boolean {
  if (result.ok) return true;
  if (!result.retryable || startedNothing(result)) return false;
  if (/^(http|twilio|fast2sms)_\d+$/.test(result.code)) return false;
  return !['net_econnrefused', 'net_enotfound', 'net_eai_again'].includes(result.code);
}

/** Whether the contact may have received this SOS (sent, or an attempt whose outcome is unknown). */
export function sosMayHaveReached(sos: Delivery): boolean {
  if (sos.status === 'sent' || sos.status === 'delivered' || sos.status === 'sending') return true;
  // failed by a receipt (undelivered) after the carrier took it, now or before a resend: treat as reached, the all-clear is harmless
  return sos.providerMessageId !== undefined || (sos.earlierMessageIds?.length ?? 0) > 0 || sos.maybeAccepted === true;
}

/**
 * Who gets an all-clear, decided when the all-clear is created after "I'm safe": the
 * contacts whose SOS went out or may have (sending now, or an ambiguous earlier attempt).
 * A pending SOS that never left is superseded instead, and that contact hears nothing.
 */
export const wantsAllClear = (sos: Delivery): boolean => sos.kind === 'sos' && sosMayHaveReached(sos);

/**
 * What the dispatcher does with a claimed all-clear, given the same contact's SOS:
 * wait while the SOS outcome is unknown (the all-clear must not arrive first), send once
 * the SOS went out or may have, supersede when it definitely never reached the contact.
 */
export type AllClearStep = 'wait' | 'send' | 'supersede';
export function allClearStep(sos: Delivery | null): AllClearStep {
  if (!sos) return 'send';
  if (sos.status === 'pending' || sos.status === 'sending') return 'wait';
  return sosMayHaveReached(sos) ? 'send' : 'supersede';
}
