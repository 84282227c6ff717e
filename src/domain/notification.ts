/**
 * The person's inbox: what happened while the app was away. Pure. Each notification is keyed
 * by the fact it reports (`warning:<timerId>:<n>`, `contacts_texted:<incidentId>`,
 * `acknowledged:<incidentId>`), unique per person, so recording the same fact twice (a repaired
 * step, a retried request) leaves one notification.
 */
import type { Incident } from './incident.js';
import type { Timer } from './timer.js';
import { warningKey } from './warning.js';

export const NOTIFICATION_KINDS = [
  'timer_warning',
  'contacts_texted',
  'incident_acknowledged',
  'contact_unreachable',
  'contact_acknowledged',
  'contact_opted_out',
] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

export interface Notification {
  id: string;
  userId: string;
  /** the fact it reports; unique per person */
  key: string;
  kind: NotificationKind;
  title: string;
  body: string;
  timerId?: string;
  incidentId?: string;
  createdAt: Date;
  readAt?: Date;
}

export type NewNotification = Omit<Notification, 'createdAt' | 'readAt'>;

/** Where a page of the inbox stops: the last notification it answered (newest first). */
export interface InboxPosition {
  createdAt: Date;
  id: string;
}

const hhmm = (d: Date) => `${d.toISOString().slice(11, 16)} UTC`;

export function warningNotification(t: Timer, id: string): NewNotification {
  return {
    id,
    userId: t.userId,
    key: warningKey(t),
    kind: 'timer_warning',
    title: 'Your timer is about to run out',
    body: `Your safety timer ends at ${hhmm(t.expiresAt)}. Tap "I'm safe" or extend it, or your contacts will be texted.`,
    timerId: t.id,
  };
}

export function contactsTextedNotification(i: Pick<Incident, 'id' | 'userId'>, id: string): NewNotification {
  return {
    id,
    userId: i.userId,
    key: `contacts_texted:${i.id}`,
    kind: 'contacts_texted',
    title: 'Your contacts were texted',
    body: 'Your emergency contacts received an SOS text. If you are safe, tell them, or tap "I\'m safe".',
    incidentId: i.id,
  };
}

export function acknowledgedNotification(i: Incident, id: string): NewNotification {
  return {
    id,
    userId: i.userId,
    key: `acknowledged:${i.id}`,
    kind: 'incident_acknowledged',
    title: 'A moderator is on it',
    body: 'A Vigil moderator has seen your SOS and is following it.',
    incidentId: i.id,
  };
}

/**
 * Why a carrier says a contact cannot be texted: their number refuses our texts (Twilio 21610,
 * the number sent STOP) or is not a number that can take a text (21211 invalid, 21614 not mobile).
 */
export type Unreachable = 'opted_out' | 'invalid_number';
const UNREACHABLE_CODES: Readonly<Record<string, Unreachable>> = {
  twilio_21610: 'opted_out',
  twilio_21211: 'invalid_number',
  twilio_21614: 'invalid_number',
};
/** The reason behind a permanent carrier error code (`twilio_21610`), if it says the contact cannot be reached. */
export const unreachableBy = (code: string | undefined): Unreachable | undefined =>
  code === undefined ? undefined : UNREACHABLE_CODES[code];

/** One entry per text a carrier refused for that reason (keyed by the delivery): the person should fix or replace the contact. */
export function contactUnreachableNotification(
  d: { key: string; userId: string; incidentId: string; contactName: string },
  why: Unreachable,
  id: string,
): NewNotification {
  return {
    id,
    userId: d.userId,
    key: `contact_unreachable:${d.key}`,
    kind: 'contact_unreachable',
    title: why === 'opted_out' ? `${d.contactName} does not take Vigil texts` : `${d.contactName} cannot be texted`,
    body:
      why === 'opted_out'
        ? `${d.contactName}'s number has refused texts from Vigil (they replied STOP), so they will not get your SOS texts. Ask them to reply START, or add someone else.`
        : `The carrier says ${d.contactName}'s number cannot receive texts. Check the number, or add someone else.`,
    incidentId: d.incidentId,
  };
}

/** A contact replied YES to the SOS of this incident (one entry per contact and incident). Names the contact, never their text. */
export function contactAcknowledgedNotification(
  i: Pick<Incident, 'id' | 'userId'>,
  contact: { id: string; name: string },
  id: string,
): NewNotification {
  return {
    id,
    userId: i.userId,
    key: `contact_ack:${i.id}:${contact.id}`,
    kind: 'contact_acknowledged',
    title: `${contact.name} is on it`,
    body: `${contact.name} answered your SOS text: they are on it.`,
    incidentId: i.id,
  };
}

/** A contact replied STOP (one entry per reply, keyed by its message id): they will get no more texts. */
export function contactOptedOutNotification(
  userId: string,
  contact: { id: string; name: string },
  messageSid: string,
  id: string,
): NewNotification {
  return {
    id,
    userId,
    key: `contact_opted_out:${contact.id}:${messageSid}`,
    kind: 'contact_opted_out',
    title: `${contact.name} stopped Vigil texts`,
    body: `${contact.name} replied STOP, so they will not get your SOS texts. Ask them to reply START, or add someone else.`,
  };
}
