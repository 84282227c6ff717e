/** The wire shape of timers, incidents and deliveries, shared by the REST answers and the events. */
import type { Delivery } from '../domain/delivery.js';
import { hasTimer, incidentSources, type Incident } from '../domain/incident.js';
import { incidentReference } from '../domain/locale.js';
import type { Notification } from '../domain/notification.js';
import type { Timer } from '../domain/timer.js';
import { meetingView } from './location.js';

/** a date as ISO 8601 text; a date that is always there stays a string in the wire type */
function iso(d: Date): string;
function iso(d: Date | undefined): string | undefined;
function iso(d: Date | undefined): string | undefined {
  return d?.toISOString();
}

/**
 * How phone numbers in a view are shown. REST answers carry them as stored (the owner typed
 * them; moderators call them); events mask them (`maskPhone`), as they do a delivery's number:
 * an event reaches every socket of a room, and moderators read full numbers over REST.
 */
export type PhoneShown = (phone: string) => string;
export const fullPhone: PhoneShown = (p) => p;

export function timerView(t: Timer, phone: PhoneShown = fullPhone) {
  return {
    id: t.id,
    userId: t.userId,
    status: t.status,
    startedAt: iso(t.startedAt),
    expiresAt: iso(t.expiresAt),
    resolvedAt: iso(t.resolvedAt),
    updatedAt: iso(t.updatedAt),
    locationName: t.locationName,
    location: t.location,
    extensions: t.extensions,
    incidentId: t.incidentId,
    timeZone: t.timeZone,
    // the owner's and moderators' eyes only: timer views go to the owner, and to moderators on expiry
    meeting: meetingView(t.meeting, phone),
  };
}

/** An incident as moderators see it: who acknowledged and resolved it included. */
export function incidentView(i: Incident, phone: PhoneShown = fullPhone) {
  return {
    id: i.id,
    // a panic incident with no timer behind it has none to show
    timerId: hasTimer(i) ? i.timerId : undefined,
    userId: i.userId,
    status: i.status,
    deadline: iso(i.deadline),
    createdAt: iso(i.createdAt),
    updatedAt: iso(i.updatedAt),
    acknowledgedAt: iso(i.acknowledgedAt),
    acknowledgedBy: i.acknowledgedBy,
    resolvedAt: iso(i.resolvedAt),
    resolvedBy: i.resolvedBy,
    locationName: i.locationName,
    location: i.location,
    displayName: i.displayName,
    // what the contacts' texts quote (domain/locale.ts)
    reference: incidentReference(i.id),
    allClear: i.allClear,
    meeting: meetingView(i.meeting, phone),
    source: incidentSources(i)[0],
    sources: incidentSources(i),
    // timers that joined it after it opened (one open SOS per person): each can check in and post fixes
    linkedTimerIds: i.linkedTimers,
    // the person's own words with each panic press
    panicNotes: i.panicNotes?.map((n) => ({ text: n.text, at: iso(n.at) })),
    // contacts who replied YES ("I'm on it"); the message id stays with the store
    contactAcks: i.contactAcks?.map((a) => ({ contactId: a.contactId, name: a.name, at: iso(a.at) })),
    redactedAt: iso(i.redactedAt),
  };
}

/** The person's own incident (REST answers and events to their room): no moderator ids (`acknowledgedBy`, `resolvedBy`). */
export function ownIncidentView(i: Incident, phone: PhoneShown = fullPhone) {
  return { ...incidentView(i, phone), acknowledgedBy: undefined, resolvedBy: undefined };
}

export function notificationView(n: Notification) {
  return {
    id: n.id,
    kind: n.kind,
    title: n.title,
    body: n.body,
    timerId: n.timerId,
    incidentId: n.incidentId,
    createdAt: iso(n.createdAt),
    readAt: iso(n.readAt),
  };
}

/** An escalation moderators must look at (dead letter): the timer and why it failed. */
export function failedEscalationView(t: Timer) {
  return { ...timerView(t), escalation: t.escalation, escalationAttempts: t.escalationAttempts ?? 0, escalationError: t.escalationError };
}

/** Deliveries as moderators see them; the phone is masked (they read full numbers over REST). */
export function deliveryView(d: Delivery, maskPhone: (p: string) => string) {
  return {
    key: d.key,
    incidentId: d.incidentId,
    contactId: d.contactId,
    contactName: d.contactName,
    phone: maskPhone(d.phone),
    kind: d.kind,
    status: d.status,
    attempts: d.attempts,
    carrier: d.carrier,
    lastError: d.lastError,
    maybeAccepted: d.maybeAccepted,
    nextAttemptAt: iso(d.nextAttemptAt),
    updatedAt: iso(d.updatedAt),
    resends: d.resends,
    redactedAt: iso(d.redactedAt),
  };
}
