/**
 * Documents, schemas and indexes of the MongoDB store. Times are BSON dates. Every
 * index here is created at start-up (`createIndexes`, additive: an index added by an
 * operator is never dropped) and listed in docs/mongodb.md.
 *
 * Uniqueness is carried by sparse single-field indexes on fields that exist only while
 * the constraint applies (`liveUser`, `idemScope`), because FerretDB v1 does not
 * implement `partialFilterExpression`. A sparse index skips documents that LACK the
 * field — not documents where it is null — so the adapter `$unset`s them, never nulls.
 */
import { Schema, type Connection, type Model } from 'mongoose';
import type { Contact } from '../../domain/contact.js';
import { DELIVERY_STATUSES, type Delivery } from '../../domain/delivery.js';
import { INCIDENT_SOURCES, INCIDENT_STATUSES, type Incident } from '../../domain/incident.js';
import { NOTIFICATION_KINDS, type Notification } from '../../domain/notification.js';
import { ESCALATION_STATES, TIMER_STATUSES, type GeoPoint, type Meeting, type Timer } from '../../domain/timer.js';
import { fixSchema, type FixDoc } from './location-schema.js';
import { makeKeyingModel, type KeyingDoc } from './contact-ids-schema.js';
import { tokenStampSchema, type TokenStampDoc } from './tokens-schema.js';
import { duressPinSchema, type DuressPinDoc } from './duress-schema.js';
import { makeModerationModels, type ModerationModels } from './moderation-schemas.js';

/** A timer as stored: the domain record with `_id` for `id`, plus what only the store needs. */
export type TimerDoc = Omit<Timer, 'id'> & {
  _id: string;
  /** = userId while the timer is live, absent once terminal: unique → one live timer per person */
  liveUser?: string;
  /** JSON `[userId, Idempotency-Key]` of the request that created the timer: unique → one timer per key */
  idemScope?: string;
  /** fingerprint of that request's body */
  idemFingerprint?: string;
  /**
   * Idempotency-Keys of the commands (extend, safe, cancel) applied to this timer, pushed by
   * the CAS that applied each; bounded by the extension cap plus one resolve.
   */
  cmdKeys?: CommandKey[];
  /** token of the last write, to decide writes whose write concern was not confirmed */
  lastOp?: string;
  /** token of the sweep claim that expired it */
  claimToken?: string;
  /** when retention removed its place, coordinates and display name */
  redactedAt?: Date;
  /** sweep slot (domain/sweep-shard.ts), set when armed; absent on timers armed before slots existed (slot 0) */
  slot?: number;
  /** the moderator who last retried its dead-lettered escalation, and when (the audit line is derived from them) */
  retriedBy?: string;
  retriedAt?: Date;
};

export interface CommandKey {
  key: string;
  /** covers the command, the timer and the body */
  fingerprint: string;
}

/** An incident as stored: the domain record with `_id` for `id`. */
export type IncidentDoc = Omit<Incident, 'id'> & {
  _id: string;
  /**
   * = userId while the incident is open, absent otherwise: unique → one open incident per person
   * (the index keeps its first name, `one_open_panic_per_user`: createIndexes cannot rename one).
   * Incidents opened before every incident carried it have none.
   */
  openUser?: string;
  /** Idempotency-Keys of the panic requests answered with this incident */
  sosKeys?: CommandKey[];
  /** token of the last write, to decide writes whose write concern was not confirmed */
  lastOp?: string;
};

/** A delivery as stored: the domain record with `_id` for `key`. */
export type DeliveryDoc = Omit<Delivery, 'key'> & {
  /** the delivery key, `incidentId:contactId[:kind]` (also the carrier idempotency key) */
  _id: string;
  /** token of the dispatcher claim that leased it */
  claimToken?: string;
  /** the moderator who last resent or cancelled it (the audit line is derived from it) */
  moderatedBy?: string;
  /** token of the last write, to decide writes whose write concern was not confirmed */
  lastOp?: string;
};

/**
 * A carrier receipt for a message no delivery has recorded yet (`_id` = the carrier's message
 * id): kept until an attempt is recorded with that id, then applied and removed; one older
 * than EARLY_RECEIPT_KEEP_MS is ignored and removed when another one is kept (FerretDB v1 has
 * no TTL indexes). No number, no text.
 */
export interface EarlyReceiptDoc {
  _id: string;
  status: 'sent' | 'delivered' | 'failed';
  receivedAt: Date;
}

/** One document per person: replacing the list is a single-document (atomic) write. */
export interface ContactsDoc {
  /** the user id */
  _id: string;
  contacts: Contact[];
  /** contacts who opted out while confirmed: START confirms them again (not part of the contact as the API shows it) */
  confirmedBefore?: string[];
  /** the person's defaults for their contacts' texts */
  language?: string;
  timeZone?: string;
  updatedAt: Date;
  /** token of the last write, to decide writes whose write concern was not confirmed */
  lastOp?: string;
}

/** A notification as stored: the domain record with `_id` for `id`. */
export type NotificationDoc = Omit<Notification, 'id'> & { _id: string };

export interface Models extends ModerationModels {
  notifications: Model<NotificationDoc>;
  timers: Model<TimerDoc>;
  incidents: Model<IncidentDoc>;
  deliveries: Model<DeliveryDoc>;
  earlyReceipts: Model<EarlyReceiptDoc>;
  contacts: Model<ContactsDoc>;
  fixes: Model<FixDoc>;
  /** what the contact ids are derived with (./contact-ids-schema.ts) */
  keying: Model<KeyingDoc>;
  /** token revocation: each person's "tokens not before" stamp */
  tokenStamps: Model<TokenStampDoc>;
  /** the duress PIN: one scrypt hash per person who set one */
  duressPins: Model<DuressPinDoc>;
}

// No buffering (fail fast instead of queueing while disconnected), no automatic index
// builds (MongoStore.connect builds them and reports failures), our own updatedAt.
const OPTIONS = { versionKey: false, timestamps: false, bufferCommands: false, autoIndex: false, autoCreate: false, strict: true } as const;

const commandKey = () =>
  new Schema<CommandKey>({ key: { type: String, required: true }, fingerprint: { type: String, required: true } }, { _id: false });

const point = () => new Schema<GeoPoint>({ lat: { type: Number, required: true }, lng: { type: Number, required: true } }, { _id: false });
const meeting = () => new Schema<Meeting>({ withUserId: String, name: String, phone: String }, { _id: false });

function timerSchema(): Schema<TimerDoc> {
  const s = new Schema<TimerDoc>(
    {
      _id: { type: String, required: true },
      userId: { type: String, required: true },
      status: { type: String, enum: TIMER_STATUSES, required: true },
      startedAt: { type: Date, required: true },
      expiresAt: { type: Date, required: true },
      resolvedAt: Date,
      updatedAt: { type: Date, required: true },
      locationName: String,
      location: { type: point(), required: false },
      displayName: String,
      timeZone: String,
      extensions: { type: Number, required: true },
      escalation: { type: String, enum: ESCALATION_STATES, required: true },
      incidentId: String,
      expiredByFence: Number,
      escalationAttempts: Number,
      escalationError: String,
      retriedBy: String,
      retriedAt: Date,
      traceparent: String,
      meeting: { type: meeting(), required: false },
      warnedAt: Date,
      duressPending: Boolean,
      liveUser: String,
      idemScope: String,
      idemFingerprint: String,
      cmdKeys: { type: [commandKey()], default: undefined },
      claimToken: String,
      lastOp: String,
      redactedAt: Date,
      slot: Number,
    },
    { ...OPTIONS, collection: 'timers' },
  );
  // the sweep: equality on status before the range on expiresAt (ESR)
  s.index({ status: 1, expiresAt: 1 }, { name: 'sweep_due' });
  s.index({ userId: 1, status: 1 }, { name: 'user_status' });
  s.index({ userId: 1, updatedAt: 1 }, { name: 'user_updated' });
  // invariant 2: at most one live timer per person (liveUser is unset on every terminal transition)
  s.index({ liveUser: 1 }, { name: 'one_live_timer_per_user', unique: true, sparse: true });
  // invariant 6: one timer per (person, Idempotency-Key)
  s.index({ idemScope: 1 }, { name: 'idempotency_key', unique: true, sparse: true });
  // crash repair: expired timers whose escalation is pending, oldest deadline first
  s.index({ escalation: 1, expiresAt: 1 }, { name: 'escalation_pending' });
  // crash repair: duress check-ins whose silent SOS is still owed (absent on every other timer)
  s.index({ duressPending: 1, resolvedAt: 1 }, { name: 'duress_pending', sparse: true });
  return s;
}

function incidentSchema(): Schema<IncidentDoc> {
  const s = new Schema<IncidentDoc>(
    {
      _id: { type: String, required: true },
      timerId: { type: String, required: true },
      userId: { type: String, required: true },
      status: { type: String, enum: INCIDENT_STATUSES, required: true },
      deadline: { type: Date, required: true },
      createdAt: { type: Date, required: true },
      updatedAt: { type: Date, required: true },
      acknowledgedAt: Date,
      acknowledgedBy: String,
      resolvedAt: Date,
      resolvedBy: String,
      locationName: String,
      location: { type: point(), required: false },
      displayName: String,
      fence: { type: Number, required: true },
      allClear: { type: String, enum: ['pending', 'done'] },
      meeting: { type: meeting(), required: false },
      sources: { type: [{ type: String, enum: INCIDENT_SOURCES }], default: undefined },
      openUser: String,
      panicTexts: { type: String, enum: ['pending', 'done'] },
      linkedTimers: { type: [String], default: undefined },
      panicNotes: {
        type: [new Schema({ text: { type: String, required: true }, at: { type: Date, required: true } }, { _id: false })],
        default: undefined,
      },
      // contacts who replied YES, once each (./replies.ts)
      contactAcks: {
        type: [
          new Schema(
            {
              contactId: { type: String, required: true },
              name: { type: String, required: true },
              at: { type: Date, required: true },
              messageSid: { type: String, required: true },
            },
            { _id: false },
          ),
        ],
        default: undefined,
      },
      sosKeys: { type: [commandKey()], default: undefined },
      lastOp: String,
      redactedAt: Date,
    },
    { ...OPTIONS, collection: 'incidents' },
  );
  // invariant 3: one incident per timer, whatever the number of sweepers
  s.index({ timerId: 1 }, { name: 'one_incident_per_timer', unique: true });
  // the highest fence, read when the lock's counter was lost (Redis restarted)
  s.index({ fence: -1 }, { name: 'fence' });
  s.index({ status: 1, createdAt: 1 }, { name: 'status_created' });
  s.index({ createdAt: 1, _id: 1 }, { name: 'created' });
  s.index({ updatedAt: 1 }, { name: 'updated' });
  // crash repair: false alarms whose all-clear did not finish (absent on every other incident)
  s.index({ allClear: 1, updatedAt: 1 }, { name: 'all_clear_pending', sparse: true });
  // a person's open incident (and keys of panic requests); one open incident per person (openUser: every open incident carries it)
  s.index({ userId: 1, status: 1 }, { name: 'user_status' });
  s.index({ openUser: 1 }, { name: 'one_open_panic_per_user', unique: true, sparse: true });
  // crash repair: panic incidents whose texts are not created yet (absent on every other incident)
  s.index({ panicTexts: 1, createdAt: 1 }, { name: 'panic_texts_pending', sparse: true });
  return s;
}

function deliverySchema(): Schema<DeliveryDoc> {
  const s = new Schema<DeliveryDoc>(
    {
      _id: { type: String, required: true },
      incidentId: { type: String, required: true },
      userId: { type: String, required: true },
      contactId: { type: String, required: true },
      contactName: { type: String, required: true },
      phone: { type: String, required: true },
      kind: { type: String, enum: ['sos', 'all_clear', 'moved'], required: true },
      body: { type: String, required: true },
      status: { type: String, enum: DELIVERY_STATUSES, required: true },
      attempts: { type: Number, required: true },
      nextAttemptAt: { type: Date, required: true },
      leaseUntil: Date,
      carrier: String,
      providerMessageId: String,
      earlierMessageIds: { type: [String], default: undefined },
      lastError: String,
      maybeAccepted: Boolean,
      createdAt: { type: Date, required: true },
      updatedAt: { type: Date, required: true },
      traceparent: String,
      claimToken: String,
      lastOp: String,
      resends: Number,
      redactedAt: Date,
      moderatedBy: String,
    },
    { ...OPTIONS, collection: 'deliveries' },
  );
  // invariant 5: one delivery per (incident, contact, kind); also serves "deliveries of an incident"
  s.index({ incidentId: 1, contactId: 1, kind: 1 }, { name: 'one_per_recipient', unique: true });
  // the dispatcher's claim is an $or of two branches; each needs its own index
  s.index({ status: 1, nextAttemptAt: 1 }, { name: 'due' });
  s.index({ status: 1, leaseUntil: 1 }, { name: 'lapsed_lease' });
  s.index({ providerMessageId: 1 }, { name: 'provider_message', sparse: true });
  s.index({ userId: 1, createdAt: 1 }, { name: 'user_created' });
  return s;
}

function earlyReceiptSchema(): Schema<EarlyReceiptDoc> {
  const s = new Schema<EarlyReceiptDoc>(
    {
      _id: { type: String, required: true },
      status: { type: String, enum: ['sent', 'delivered', 'failed'], required: true },
      receivedAt: { type: Date, required: true },
    },
    { ...OPTIONS, collection: 'early_receipts' },
  );
  // expiry, oldest first (a plain index: FerretDB v1 refuses expireAfterSeconds)
  s.index({ receivedAt: 1 }, { name: 'received' });
  return s;
}

function contactsSchema(): Schema<ContactsDoc> {
  const contact = new Schema<Contact>(
    {
      id: { type: String, required: true },
      name: { type: String, required: true },
      phone: { type: String, required: true },
      language: String,
      state: String,
    },
    { _id: false },
  );
  return new Schema<ContactsDoc>(
    {
      _id: { type: String, required: true },
      contacts: { type: [contact], required: true },
      confirmedBefore: { type: [String], default: undefined },
      language: String,
      timeZone: String,
      updatedAt: { type: Date, required: true },
      lastOp: String,
    },
    { ...OPTIONS, collection: 'contacts' },
  ).index({ 'contacts.phone': 1 }, { name: 'contacts_by_phone' }); // a reply is mapped to its contacts by number
}

function notificationSchema(): Schema<NotificationDoc> {
  const s = new Schema<NotificationDoc>(
    {
      _id: { type: String, required: true },
      userId: { type: String, required: true },
      key: { type: String, required: true },
      kind: { type: String, enum: NOTIFICATION_KINDS, required: true },
      title: { type: String, required: true },
      body: { type: String, required: true },
      timerId: String,
      incidentId: String,
      createdAt: { type: Date, required: true },
      readAt: Date,
    },
    { ...OPTIONS, collection: 'notifications' },
  );
  // one notification per fact and person
  s.index({ userId: 1, key: 1 }, { name: 'one_per_fact', unique: true });
  // the inbox, newest first
  s.index({ userId: 1, createdAt: -1, _id: -1 }, { name: 'inbox' });
  // retention: the oldest entries first
  s.index({ createdAt: 1 }, { name: 'retention' });
  return s;
}

/** The models, bound to one connection (never to the global mongoose singleton). */
export function makeModels(conn: Connection): Models {
  return {
    notifications: conn.model<NotificationDoc>('Notification', notificationSchema()),
    timers: conn.model<TimerDoc>('Timer', timerSchema()),
    incidents: conn.model<IncidentDoc>('Incident', incidentSchema()),
    deliveries: conn.model<DeliveryDoc>('Delivery', deliverySchema()),
    earlyReceipts: conn.model<EarlyReceiptDoc>('EarlyReceipt', earlyReceiptSchema()),
    contacts: conn.model<ContactsDoc>('Contacts', contactsSchema()),
    fixes: conn.model<FixDoc>('LocationFix', fixSchema(OPTIONS)),
    keying: makeKeyingModel(conn),
    tokenStamps: conn.model<TokenStampDoc>('TokenStamp', tokenStampSchema(OPTIONS)),
    duressPins: conn.model<DuressPinDoc>('DuressPin', duressPinSchema(OPTIONS)),
    ...makeModerationModels(conn),
  };
}
