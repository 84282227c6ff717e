/**
 * Response shapes (zod) that the OpenAPI document is generated from, plus the geo point that
 * requests share. Responses are plain objects: they describe, they do not refuse extra fields.
 */
import { z } from 'zod';
import { CONTACT_STATES, E164 } from '../domain/contact.js';
import { DELIVERY_STATUSES, type DeliveryKind } from '../domain/delivery.js';
import { INCIDENT_SOURCES, INCIDENT_STATUSES } from '../domain/incident.js';
import { LANGUAGES } from '../domain/locale.js';
import { NOTIFICATION_KINDS } from '../domain/notification.js';
import { ESCALATION_STATES, TIMER_STATUSES } from '../domain/timer.js';
import { Note } from './moderation-schemas.js';

const at = (description: string) => z.iso.datetime().meta({ description });

export const GeoPoint = z.strictObject({ lat: z.number().min(-90).max(90), lng: z.number().min(-180).max(180) });

export const Meeting = z
  .object({ withUserId: z.string().optional(), name: z.string().optional(), phone: z.string().optional() })
  .meta({ description: 'whom the person is meeting; only the person and moderators see it' });

export const Fix = z.object({
  lat: z.number().min(-90).max(90),
  lng: z.number().min(-180).max(180),
  accuracyM: z.number().min(0).optional(),
  at: at('when the phone took the fix'),
});

export const FixAnswer = z.object({
  kept: z.boolean().meta({ description: 'false: dropped (under 10 m from the last kept fix, or older than it); nothing stored' }),
  reason: z.enum(['too_close', 'older_than_latest']).optional(),
  fix: Fix,
  incidentId: z.string().meta({ description: 'set while the timer’s SOS incident is open (moderators see this fix live)' }).optional(),
});

export const Trail = z.object({
  timerId: z
    .string()
    .meta({ description: 'the timer; for an incident, its own timer (absent for a panic with no timer behind it)' })
    .optional(),
  incidentId: z.string().optional(),
  fixes: z.array(Fix).meta({ description: 'kept fixes, oldest first (at most the latest 500)' }),
  fresh: z.boolean().meta({
    description:
      'true: the last fix is the newest one any replica kept (the one an SOS written now would use); false: the shared latest-fix cache could not be read, the trail holds the stored fixes and may lag by up to maxLagSeconds',
  }),
  maxLagSeconds: z
    .number()
    .int()
    .meta({ description: 'with fresh: false, how far behind the newest kept fix the trail may be (LOCATION_FLUSH_SECONDS)' })
    .optional(),
});

export const TrailList = z.object({
  trails: z
    .array(Trail)
    .meta({ description: 'one trail per incident asked about that exists (in no particular order; an unknown id is left out)' }),
});

export const Timer = z.object({
  id: z.string(),
  timeZone: z.string().meta({ description: 'the IANA time zone given when it was armed (SOS texts say the deadline in it)' }).optional(),
  userId: z.string(),
  status: z.enum(TIMER_STATUSES),
  startedAt: at('when it was armed'),
  expiresAt: at('the deadline'),
  resolvedAt: at('when it became safe, cancelled or expired').optional(),
  updatedAt: at('last change'),
  locationName: z.string().max(120).optional(),
  location: GeoPoint.optional(),
  extensions: z.int().min(0),
  incidentId: z.string().meta({ description: 'set once the SOS incident is open' }).optional(),
  meeting: Meeting.optional(),
});

const cursor = z.string().meta({
  description: 'opaque; pass it back as `since` to read what changed after this answer (a change may come again, none is skipped)',
});
const serverTime = at('the store’s clock when the read began');

export const TimerList = z.object({
  timers: z.array(Timer),
  cursor,
  more: z.boolean().meta({ description: 'a full page came back: read again with the new cursor' }),
  serverTime,
});

export const Incident = z.object({
  id: z.string(),
  timerId: z.string().meta({ description: 'the timer behind it; absent for a panic SOS raised without a live timer' }).optional(),
  userId: z.string(),
  status: z.enum(INCIDENT_STATUSES),
  deadline: at('the deadline that passed'),
  createdAt: at('when the SOS was opened'),
  updatedAt: at('last change'),
  acknowledgedAt: at('when a moderator acknowledged it').optional(),
  acknowledgedBy: z.string().meta({ description: 'the moderator (`sub`); in moderators’ views only, never in the person’s' }).optional(),
  resolvedAt: at('when it was resolved or became a false alarm').optional(),
  resolvedBy: z
    .string()
    .meta({ description: 'who resolved it (`sub`): a moderator, or the person; in moderators’ views only, never in the person’s' })
    .optional(),
  locationName: z.string().optional(),
  location: GeoPoint.meta({
    description: 'where the SOS text said the person was: the freshest live fix at escalation, else the point given on arming',
  }).optional(),
  displayName: z.string().optional(),
  reference: z.string().meta({ description: 'the short reference the texts give the contacts (`K7Q-2MX`), derived from the id' }),
  meeting: Meeting.optional(),
  allClear: z
    .enum(['pending', 'done'])
    .meta({
      description:
        'the texts that end the SOS for the contacts (all-clear after I am safe, closing text after a resolve) are being completed, or done',
    })
    .optional(),
  source: z.enum(INCIDENT_SOURCES).meta({ description: 'what opened it: a timer that ran out, or the panic button' }),
  sources: z.array(z.enum(INCIDENT_SOURCES)).meta({ description: 'everything that raised it, first the one that opened it' }),
  linkedTimerIds: z
    .array(z.string())
    .meta({
      description:
        'timers that joined this open incident after it opened (one open SOS per person): each can check in (I am safe ends the incident) and post fixes; the trail covers them all',
    })
    .optional(),
  panicNotes: z
    .array(z.object({ text: z.string(), at: at('when the press was made') }))
    .meta({ description: 'what the person wrote with each panic press, oldest first' })
    .optional(),
  contactAcks: z
    .array(z.object({ contactId: z.string(), name: z.string(), at: at('when the reply arrived') }))
    .meta({
      description:
        'contacts who replied YES ("I\'m on it") to their SOS text, once each, oldest first; not the moderator\'s acknowledgement',
    })
    .optional(),
  redactedAt: at('when retention removed its place, coordinates and display name').optional(),
});

const DELIVERY_KINDS = ['sos', 'all_clear', 'moved'] as const satisfies readonly DeliveryKind[];

export const Delivery = z.object({
  key: z.string().meta({
    description:
      '`incidentId:contactId` (SOS), `incidentId:contactId:all_clear` or `incidentId:contactId:moved`; the carrier idempotency key',
  }),
  incidentId: z.string(),
  contactId: z.string(),
  contactName: z.string(),
  phone: z.string().meta({ description: 'E.164 (full number over REST, masked in Socket.IO events)' }),
  kind: z.enum(DELIVERY_KINDS),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.int().min(0),
  carrier: z.string().optional(),
  lastError: z.string().optional(),
  maybeAccepted: z
    .boolean()
    .meta({ description: 'an attempt ended without knowing whether the carrier took the text (timeout, lost lease)' })
    .optional(),
  nextAttemptAt: at('when the next attempt is due'),
  updatedAt: at('last change'),
  resends: z.int().min(1).meta({ description: 'how many times a moderator sent it again' }).optional(),
  redactedAt: at('when retention masked the number and removed the text').optional(),
});

export const IncidentWithDeliveries = Incident.extend({
  deliveries: z.array(Delivery),
  notes: z.array(Note).meta({ description: 'moderator notes, oldest first' }),
});

export const IncidentList = z.object({
  incidents: z.array(IncidentWithDeliveries),
  cursor,
  more: z.boolean().meta({ description: 'a full page came back: read again with the new cursor' }),
  serverTime,
});

export const FailedEscalation = Timer.extend({
  escalation: z.enum(ESCALATION_STATES),
  escalationAttempts: z.int().min(0),
  escalationError: z.string().meta({ description: 'the last escalation error' }).optional(),
});

export const FailedEscalationList = z.object({ timers: z.array(FailedEscalation) });

export const Contact = z.object({
  id: z.string(),
  name: z.string().max(80),
  phone: z.string().regex(E164),
  language: z
    .enum(LANGUAGES)
    .meta({ description: "the language of this contact's texts; absent: the list's `language`, else English" })
    .optional(),
  state: z.enum(CONTACT_STATES).meta({
    description:
      '`pending` (added, no answer yet), `confirmed`, `declined`, `opted_out` (their number refuses our texts); an SOS goes to pending and confirmed contacts only',
  }),
});

export const ContactList = z.object({
  contacts: z.array(Contact),
  language: z.enum(LANGUAGES).meta({ description: 'the language of the texts of a contact who has none of their own' }).optional(),
  timeZone: z.string().meta({ description: 'IANA time zone name: the times in texts are said in it (absent: UTC)' }).optional(),
});

/** The caller's duress PIN: set or not (the PIN itself is never answered). */
export const DuressState = z.object({ duress: z.object({ set: z.boolean() }) });

export const Revocation = z.object({
  userId: z.string(),
  revokedBefore: at('the person\'s new "tokens not before" stamp (store clock): tokens issued at or before it are refused'),
});

export const Readiness = z.object({
  status: z.enum(['ready', 'not_ready']).meta({
    description: 'ready or not, nothing more (which check failed is in `vigil_store_up` and the logs, not on a public route)',
  }),
});

export const TwilioStatusCallback = z.object({
  MessageSid: z.string(),
  MessageStatus: z.enum(['queued', 'accepted', 'scheduled', 'sending', 'sent', 'delivered', 'undelivered', 'failed', 'canceled', 'read']),
  AccountSid: z.string().optional(),
  ErrorCode: z.string().optional(),
});

export const TwilioIncomingMessage = z.object({
  From: z.string().meta({ description: 'the E.164 number that sent the reply' }),
  To: z.string().meta({ description: 'our number it was sent to' }),
  Body: z.string().meta({ description: 'the text; read for its keyword only, never stored, logged or repeated' }).optional(),
  MessageSid: z.string(),
  AccountSid: z.string().optional(),
});

export const ErrorBody = z.object({
  error: z.object({
    code: z.string().meta({ description: 'stable, machine-readable, e.g. `timer_not_found`, `validation_failed`' }),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});

export const Notification = z.object({
  id: z.string(),
  kind: z.enum(NOTIFICATION_KINDS),
  title: z.string(),
  body: z.string(),
  timerId: z.string().optional(),
  incidentId: z.string().optional(),
  createdAt: at('when it was recorded'),
  readAt: at('when the person marked it read').optional(),
});

export const NotificationList = z.object({
  notifications: z.array(Notification),
  more: z.boolean().meta({ description: 'older ones remain: read again with `cursor`' }),
  cursor: z.string().meta({ description: 'opaque; pass it back as `cursor` for the next, older page (present when `more`)' }).optional(),
});

/** `GET /v1/me/export`: everything Vigil holds about the caller (docs/privacy.md, "Your data"). */
export const PersonalExport = z.object({
  userId: z.string(),
  exportedAt: at('when this export was read'),
  timers: z.array(Timer).meta({ description: 'every timer of theirs, oldest first' }),
  fixes: z.array(Fix.extend({ timerId: z.string() })).meta({ description: 'the stored location fixes of those timers' }),
  contacts: z.array(Contact),
  contactSettings: z
    .object({ language: z.string().optional(), timeZone: z.string().optional() })
    .meta({ description: "the contact list's default language and IANA time zone" }),
  duressPinSet: z.boolean().meta({ description: 'whether a duress PIN is set (it is kept only as a hash, never exported)' }),
  notifications: z.array(Notification).meta({ description: 'their inbox, oldest first' }),
  incidents: z.array(Incident).meta({ description: 'incidents about them (their SOS), oldest first' }),
  idempotencyRecords: z.number().int().min(0).meta({ description: 'Idempotency-Keys kept for their requests (arming, commands, panic)' }),
});

const count = (description: string) => z.number().int().min(0).meta({ description });

/** `DELETE /v1/me`: what was erased, and what was kept under the pseudonym. */
export const Erasure = z.object({
  erased: z.object({
    timers: count('timers deleted'),
    fixes: count('location fixes deleted'),
    contacts: count("contacts deleted (with the list's language and time zone)"),
    duressPin: count('duress PIN deleted (0 or 1)'),
    notifications: count('inbox entries deleted'),
    idempotencyRecords: count('Idempotency-Keys deleted'),
    incidents: count('incidents kept for review, naming only the pseudonym'),
    deliveries: count('texts of those incidents, naming only the pseudonym'),
    auditLines: count('audit lines about the caller, naming only the pseudonym'),
  }),
});
