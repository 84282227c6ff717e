/**
 * The storage port. The store is the only source of truth; every state change is one
 * compare-and-swap that returns the new record or `null` when the record was not in an
 * allowed state. Due-ness is decided by `now()`, the store's own clock.
 * Adapters: ./sqlite/sqlite-store.ts (embedded), ./mongo/ (cluster).
 */
import type { Contact, ContactState } from '../domain/contact.js';
import type { Delivery, DeliveryStatus, NewDelivery } from '../domain/delivery.js';
import type { Incident, IncidentStatus } from '../domain/incident.js';
import type { ContactSettings } from '../domain/locale.js';
import type { SweepShard } from '../domain/sweep-shard.js';
import type { GeoPoint, Meeting, Timer, TimerStatus } from '../domain/timer.js';
import type { BatchStore, DeliveryOutcome } from './port-batch.js';
import type { ContactIdStore } from './port-contact-ids.js';
import type { ReplyStore } from './port-replies.js';
import type { LocationStore } from './port-location.js';

export type { DeliveryOutcome, NewDelivery };
import type { ModerationStore } from './port-moderation.js';
import type { PersonalDataStore } from './port-personal.js';
import type { SafetyStore } from './port-safety.js';
import type { TokenStore } from './port-tokens.js';
import type { DuressStore } from './port-duress.js';

export interface NewTimer {
  id: string;
  userId: string;
  startedAt: Date;
  expiresAt: Date;
  locationName?: string;
  location?: GeoPoint;
  displayName?: string;
  /** IANA time zone name (checked by the caller) */
  timeZone?: string;
  /** W3C traceparent to store with the timer (the escalation continues that trace) */
  traceparent?: string;
  meeting?: Meeting;
}

export interface IdempotencyClaim {
  key: string;
  /** hash of the request body: the same key with another body is refused */
  fingerprint: string;
}

/** How "I'm safe" or cancel resolves a timer. */
export interface ResolveOptions {
  /** sent with the duress PIN: the CAS also records the silent SOS it owes (Timer.duressPending) */
  duress?: boolean;
}

export type ArmResult =
  | { kind: 'created'; timer: Timer }
  | { kind: 'replayed'; timer: Timer }
  /** the same Idempotency-Key was used with a different body */
  | { kind: 'idempotency_mismatch' }
  /** the person already has a live timer */
  | { kind: 'live_timer_exists'; timer: Timer };

/** The status a carrier receipt reports, in domain words (sms/twilio-receipts.ts maps Twilio's). */
export type ReceiptStatus = 'sent' | 'delivered' | 'failed';

/** What a carrier receipt did (`applyReceipt`). */
export type ReceiptOutcome =
  /** moved the delivery whose current message it is about */
  | { result: 'applied'; delivery: Delivery }
  /** no delivery's current message is that one (yet): kept until an attempt is recorded with it, at most EARLY_RECEIPT_KEEP_MS */
  | { result: 'kept' }
  /** the delivery of that message is already there or further (a repeat, a late receipt): nothing changed */
  | { result: 'stale' };

export interface ChangedSince {
  /** only records whose updatedAt is strictly after this */
  since?: Date;
  /**
   * With `since`: also the records updated at exactly `since` whose id sorts after this one
   * (keyset paging on `(updatedAt, id)`, so records sharing a millisecond are never skipped).
   * Records changed since are ordered by `(updatedAt, id)`.
   */
  sinceId?: string;
  limit?: number;
}

/**
 * The answer to a timer command carrying an Idempotency-Key. The key is recorded in the same
 * write as the compare-and-swap, so a retry can never apply the command twice.
 */
export type KeyedCommandResult =
  /** the command applied now; the key is recorded with it */
  | { kind: 'applied'; timer: Timer }
  /** this key already applied this command to this timer: nothing changed, the timer as it is now */
  | { kind: 'replayed'; timer: Timer }
  /** the key was already used by this person for another request (body, command or timer) */
  | { kind: 'idempotency_mismatch' }
  /** the CAS refused (not live, caps, deadline, not theirs): nothing recorded, decide as without a key */
  | { kind: 'refused' };

/** The incident an expired timer escalates into. */
export interface OpenedIncident {
  incident: Incident;
  /** this call inserted it */
  created: boolean;
  /** the person already had another open incident: the timer joined it (listed in `linkedTimers`) */
  joined?: boolean;
}

export interface TransitionOptions {
  /** moving to `resolved`: the contacts who were texted are owed a closing text (`allClear: 'pending'` in the same write) */
  closingTexts?: boolean;
  /**
   * A moderator's command: its audit line (`incident.acknowledge` / `incident.resolve`, its id
   * derived from the incident) is written with the CAS (SQLite: one transaction; MongoDB: right
   * after it). With `from` empty nothing moves, and the line of the step the incident already
   * took is written again with who took it: a line lost between a CAS and it is filled in.
   */
  audit?: boolean;
}

/** Live timers and open incidents by status. */
export interface StateCounts {
  timers: { active: number; extended: number };
  incidents: { active: number; acknowledged: number };
}

export interface Store
  extends BatchStore, LocationStore, SafetyStore, ModerationStore, ContactIdStore, TokenStore, PersonalDataStore, DuressStore, ReplyStore {
  /** The store's clock; everything due is decided against it. */
  now(): Promise<Date>;
  /** Readiness of the underlying connection. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
  /**
   * How long after its `updatedAt` a change may still become visible to a reader (the
   * store stamps inside the write; what remains is the commit). List cursors stay this
   * far behind `now()`, so a change that commits late is still after the cursor.
   */
  changeLagMs(): number;

  // ── timers ────────────────────────────────────────────────────────────────
  /** Create a live timer; at most one live timer per person; honours an idempotency claim. */
  armTimer(t: NewTimer, idem?: IdempotencyClaim): Promise<ArmResult>;
  /** One timer, only if it belongs to `userId` (omit `userId` for moderators). */
  getTimer(id: string, userId?: string): Promise<Timer | null>;
  /** A person's timers, newest first, optionally by status; changed since: oldest change first. */
  listTimers(userId: string, filter?: { status?: TimerStatus } & ChangedSince): Promise<Timer[]>;
  /** CAS live → extended, adding `seconds` to the deadline; only before the deadline and below the caps. */
  extendTimer(id: string, userId: string, seconds: number, caps: { maxExtensions: number; maxTotalSeconds: number }): Promise<Timer | null>;
  /** CAS live → safe | cancelled; with `duress`, the same write records the silent SOS owed (`duressPending`). */
  resolveTimer(id: string, userId: string, to: 'safe' | 'cancelled', o?: ResolveOptions): Promise<Timer | null>;
  /**
   * extendTimer under an Idempotency-Key (scoped per person; the fingerprint covers command,
   * timer and body): the key is checked and recorded in the same write as the CAS.
   */
  extendTimerKeyed(
    id: string,
    userId: string,
    seconds: number,
    caps: { maxExtensions: number; maxTotalSeconds: number },
    idem: IdempotencyClaim,
  ): Promise<KeyedCommandResult>;
  /** resolveTimer under an Idempotency-Key, as extendTimerKeyed. */
  resolveTimerKeyed(
    id: string,
    userId: string,
    to: 'safe' | 'cancelled',
    idem: IdempotencyClaim,
    o?: ResolveOptions,
  ): Promise<KeyedCommandResult>;
  /**
   * CAS up to `limit` due live timers → expired with escalation pending, stamped with `fence`.
   * Due: the deadline plus `graceMs` (default 0) has passed. With `shard`, only that sweep
   * shard's timers (domain/sweep-shard.ts; default: every timer).
   */
  claimDueTimers(limit: number, fence: number, graceMs?: number, shard?: SweepShard): Promise<Timer[]>;
  /** Expired timers whose escalation is still pending (crash repair), oldest deadline first; with `shard`, that shard's only. */
  pendingEscalations(limit: number, shard?: SweepShard): Promise<Timer[]>;
  /** CAS escalation pending → done, recording the incident. */
  markEscalated(timerId: string, incidentId: string): Promise<boolean>;
  /**
   * Count one failed escalation (`escalationAttempts` + 1, `escalationError`); at
   * `maxAttempts` the escalation becomes `failed` (dead letter: no longer pending, no longer
   * repaired every tick). Only while pending; `null` otherwise.
   */
  recordEscalationFailure(timerId: string, error: string, maxAttempts: number): Promise<Timer | null>;
  /** Dead-lettered escalations, oldest deadline first. */
  failedEscalations(limit: number): Promise<Timer[]>;
  /**
   * CAS escalation failed → pending with the failure count reset (a moderator, `actor`, retries it);
   * the last error is kept. Audited (`escalation.retry`) with the CAS (SQLite: one transaction; MongoDB:
   * right after it, and again by a repeat that finds the retry applied).
   */
  retryEscalation(timerId: string, actor: string): Promise<Timer | null>;
  /**
   * Live timers due and not claimed: past their deadline plus `graceMs` (default 0; a timer in
   * its grace is not late). How many, and the oldest deadline among them (queue age: `now -
   * oldest - graceMs`).
   */
  overdue(graceMs?: number): Promise<{ count: number; oldest?: Date }>;
  /** How many expired timers still have their escalation pending (a count, not a read of the rows). */
  countPendingEscalations(): Promise<number>;
  /** Live timers and open incidents by status (index-backed counts; closed records are not counted). */
  stateCounts(): Promise<StateCounts>;
  /**
   * The highest sweep fence recorded in the data (incidents, and timers still pending
   * escalation); 0 when none. A lock whose counter was lost (Redis restarted) continues above it.
   */
  maxRecordedFence(): Promise<number>;
  /**
   * When the oldest incident still `active` (open and nobody acknowledged it) was opened;
   * undefined when there is none. One index-backed read ({status, createdAt}), never a scan.
   */
  oldestUnacknowledged(): Promise<Date | undefined>;

  // ── incidents ─────────────────────────────────────────────────────────────
  /**
   * Create the incident of an expired timer, or return the existing one (unique per timer), or,
   * while the person has another open incident, join the timer to that one (one open SOS per
   * person, docs/invariants.md): decided in one atomic write.
   */
  openIncident(timer: Timer, fence: number, id: string): Promise<OpenedIncident>;
  getIncident(id: string): Promise<Incident | null>;
  incidentForTimer(timerId: string): Promise<Incident | null>;
  listIncidents(filter?: { status?: IncidentStatus } & ChangedSince): Promise<Incident[]>;
  /**
   * CAS incident from one of `from` to `to`, recording who did it. Moving to `false_alarm`
   * records `allClear: 'pending'` in the same write (the incident is the all-clear's outbox);
   * so does moving to `resolved` with `closingTexts`.
   */
  transitionIncident(
    id: string,
    from: readonly IncidentStatus[],
    to: IncidentStatus,
    by: string,
    opts?: TransitionOptions,
  ): Promise<Incident | null>;
  /** CAS resolved with no all-clear recorded → `allClear: 'pending'` ("I'm safe" after a resolve that texted nobody). */
  oweAllClear(id: string): Promise<Incident | null>;
  /** Incidents whose all-clear is still pending (crash repair), oldest update first. */
  pendingAllClears(limit: number): Promise<Incident[]>;
  /** CAS allClear pending → done. */
  markAllClearDone(incidentId: string): Promise<boolean>;

  // ── deliveries ────────────────────────────────────────────────────────────
  /** Insert deliveries that do not exist yet (unique per key); returns all of the incident's deliveries. */
  addDeliveries(incident: Incident, list: NewDelivery[]): Promise<Delivery[]>;
  deliveriesFor(incidentIds: string[]): Promise<Delivery[]>;
  getDelivery(key: string): Promise<Delivery | null>;
  /**
   * Lease up to `limit` deliveries that are due (pending and due, or sending with a lapsed lease), counting the attempt.
   * A lapsed lease marks the delivery `maybeAccepted` (the lost attempt may have gone out). An all-clear is not
   * claimed while the same contact's SOS of that incident is pending or sending: it never overtakes the SOS.
   */
  claimDeliveries(limit: number, leaseMs: number): Promise<Delivery[]>;
  /**
   * CAS sending(attempt) → outcome. `null` if the lease was lost to another dispatcher. An outcome
   * `sent` with a message id takes the receipt kept for that message (applyReceipt) in the same
   * write (SQLite) or right after it (MongoDB): the delivery returned shows it.
   */
  recordAttempt(key: string, attempt: number, outcome: DeliveryOutcome): Promise<Delivery | null>;
  /** CAS the incident's pending SOS and `moved` deliveries → superseded (never sent: the SOS is over); returns those it moved. */
  supersedePendingSos(incidentId: string): Promise<Delivery[]>;
  /** CAS sending(attempt) → superseded without a carrier call (the claim's attempt is given back). */
  supersedeClaimed(key: string, attempt: number, reason: string): Promise<Delivery | null>;
  /**
   * CAS sending(attempt) → pending, due at `dueAt`, the claim's attempt given back and the last
   * attempt's outcome (`lastError`) kept: nothing was sent (the lease ran short before a carrier
   * request could start, or the text waits for another one of its contact).
   */
  releaseClaim(key: string, attempt: number, dueAt: Date): Promise<Delivery | null>;
  /**
   * A carrier receipt about message `providerMessageId`: moves forward (CAS from one of `from`, the
   * domain's receiptFrom) the delivery whose current message that is; never one whose attempt is
   * another message (resent since, or re-claimed). Unknown message → kept for the attempt that
   * records it; a repeat of a kept receipt keeps the furthest status. Idempotent.
   */
  applyReceipt(providerMessageId: string, to: ReceiptStatus, from: readonly DeliveryStatus[]): Promise<ReceiptOutcome>;
  /** SMS counted against the caps: deliveries created for `userId` since `since` that went or will go to a carrier (not those superseded unsent). */
  countDeliveriesSince(userId: string, since: Date): Promise<number>;
  /** Oldest due pending delivery and the number of dead letters. */
  deliveryBacklog(): Promise<{ pending: number; oldestDue?: Date; dead: number }>;

  // ── contacts ──────────────────────────────────────────────────────────────
  getContacts(userId: string): Promise<Contact[]>;
  /** The person's defaults for their contacts' texts (language, time zone); `{}` when none were set. */
  getContactSettings(userId: string): Promise<ContactSettings>;
  /**
   * Replace the whole list and the person's defaults (absent: none) atomically. A contact still on
   * the list keeps its state (the given `state` is ignored); a new one is `pending`.
   */
  replaceContacts(userId: string, contacts: Contact[], settings?: ContactSettings): Promise<Contact[]>;
  /**
   * CAS one contact's state from one of `from` to `to`; `null` when not on the list or in another state.
   * Moving to `opted_out` remembers whether the contact was `confirmed` (for optInContact).
   */
  setContactState(userId: string, contactId: string, to: ContactState, from: readonly ContactState[]): Promise<Contact | null>;
  /** `opted_out` → `confirmed` if it was confirmed when it opted out, else `pending`; `null` when not opted out. */
  optInContact(userId: string, contactId: string): Promise<Contact | null>;
}
