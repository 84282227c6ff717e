/**
 * The person's inbox: what happened while the app was away. Pure. Each notification is keyed
 * by the fact it reports (`warning:<timerId>:<n>`, `contacts_texted:<incidentId>`,
 * `acknowledged:<incidentId>`), unique per person, so recording the same fact twice (a repaired
 * step, a retried request) leaves one notification.
 */
import type { Incident } from './incident.js';
import type { Timer } from './timer.js';
import { warningKey } from './warning.js';

export const NOTIFICATION_KINDS = ['timer_warning', 'contacts_texted', 'incident_acknowledged'] as const;
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
