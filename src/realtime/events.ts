/**
 * The event port: Socket.IO event names and payloads, part of the public API. Every
 * payload carries a stable `eventId`, the same each time the same fact is published (a
 * repaired escalation may publish twice), so clients dedupe. Moderators receive theirs
 * inside `events.batch` (./publisher.ts), each as it is built here. Phone numbers in events
 * are masked (a delivery's, the met person's); the person's copy of an incident names no
 * moderator (`ownerPayload`).
 */
import { maskPhone } from '../domain/messages.js';
import { deliveryView, incidentView, notificationView, ownIncidentView, timerView } from '../wire/views.js';
import { incidentSources, isDuress, isDuressIncidentId } from '../domain/incident.js';
import type { Notification } from '../domain/notification.js';
import type { Delivery } from '../domain/delivery.js';
import type { Incident } from '../domain/incident.js';
import type { StoredFix } from '../domain/location.js';
import { noteView } from '../wire/moderation-views.js';
import type { IncidentNote } from '../domain/moderation.js';
import type { Timer } from '../domain/timer.js';
import { fixView } from '../wire/location.js';

export const EVENT_NAMES = [
  'timer.armed',
  'timer.extended',
  'timer.safe',
  'timer.cancelled',
  'timer.expired',
  'sos.triggered',
  'incident.updated',
  'delivery.updated',
  'location.updated',
  'timer.warning',
  'notification.created',
] as const;
export type EventName = (typeof EVENT_NAMES)[number];

export type TimerEventName = Exclude<Extract<EventName, `timer.${string}`>, 'timer.warning'>;

export interface VigilEvent {
  name: EventName;
  eventId: string;
  /** owner of the timer / incident: the event goes to `user:<userId>` */
  userId: string;
  /** also to moderators (`admins` room) */
  toAdmins: boolean;
  /** to moderators only, not to the owner (moderator notes) */
  adminsOnly?: boolean;
  payload: Record<string, unknown>;
  /** what the owner's room gets instead of `payload`, when moderators see more (who acted) */
  ownerPayload?: Record<string, unknown>;
}

/** An incident event: moderators' payload with who acted, the owner's without; the met person's phone masked in both. */
function incidentPayloads(eventId: string, i: Incident) {
  return {
    payload: { eventId, incident: incidentView(i, maskPhone) },
    ownerPayload: { eventId, incident: ownIncidentView(i, maskPhone) },
    // a duress incident is silent: the person's phone (maybe in the wrong hands) never hears of it
    ...(isDuress(i) ? { adminsOnly: true } : {}),
  };
}

/** Where events go: the Socket.IO server, or nothing in a worker-only test. */
export interface EventPublisher {
  publish(event: VigilEvent): void;
}

export function timerEvent(name: TimerEventName, t: Timer): VigilEvent {
  // extensions makes each extension a distinct fact; the others happen once per timer
  const eventId = name === 'timer.extended' ? `${name}:${t.id}:${t.extensions}` : `${name}:${t.id}`;
  return { name, eventId, userId: t.userId, toAdmins: name === 'timer.expired', payload: { eventId, timer: timerView(t, maskPhone) } };
}

export function sosEvent(i: Incident): VigilEvent {
  const eventId = `sos.triggered:${i.id}`;
  return { name: 'sos.triggered', eventId, userId: i.userId, toAdmins: true, ...incidentPayloads(eventId, i) };
}

export function incidentEvent(i: Incident): VigilEvent {
  const eventId = `incident.updated:${i.id}:${i.status}`;
  return { name: 'incident.updated', eventId, userId: i.userId, toAdmins: true, ...incidentPayloads(eventId, i) };
}

/** A contact replied YES on the incident: one fact per contact (the status-keyed `incidentEvent` id would dedupe it away). */
export function contactAckEvent(i: Incident, contactId: string): VigilEvent {
  const eventId = `incident.updated:${i.id}:contact_ack:${contactId}`;
  return { name: 'incident.updated', eventId, userId: i.userId, toAdmins: true, ...incidentPayloads(eventId, i) };
}

export function deliveryEvent(d: Delivery, maskPhone: (p: string) => string): VigilEvent {
  // a resent delivery goes through the same states again: the resend count keeps those facts distinct
  const eventId = `delivery.updated:${d.key}:${d.status}:${d.attempts}${d.resends ? `:r${d.resends}` : ''}`;
  return {
    name: 'delivery.updated',
    eventId,
    userId: d.userId,
    toAdmins: true,
    // the texts of a duress incident are as silent as the incident
    ...(isDuressIncidentId(d.incidentId) ? { adminsOnly: true } : {}),
    payload: { eventId, delivery: deliveryView(d, maskPhone) },
  };
}

/**
 * A kept fix. To the person's own sockets always; to moderators only while the timer's
 * incident is open (`incidentId` given): nobody else sees fixes before an SOS.
 */
export function locationEvent(f: StoredFix, incidentId?: string): VigilEvent {
  const eventId = `location.updated:${f.timerId}:${f.at.getTime()}`;
  return {
    name: 'location.updated',
    eventId,
    userId: f.userId,
    toAdmins: incidentId !== undefined,
    payload: { eventId, timerId: f.timerId, ...(incidentId === undefined ? {} : { incidentId }), fix: fixView(f) },
  };
}
/** The deadline is near (one per deadline: an extension makes a new one); to the person only. */
export function warningEvent(t: Timer): VigilEvent {
  const eventId = `timer.warning:${t.id}:${t.extensions}`;
  return { name: 'timer.warning', eventId, userId: t.userId, toAdmins: false, payload: { eventId, timer: timerView(t, maskPhone) } };
}

/** A new entry in the person's inbox; to the person only. */
export function notificationEvent(n: Notification): VigilEvent {
  const eventId = `notification.created:${n.id}`;
  return {
    name: 'notification.created',
    eventId,
    userId: n.userId,
    toAdmins: false,
    payload: { eventId, notification: notificationView(n) },
  };
}

/**
 * A panic press joined the person's open incident: moderators (and the person) see what it
 * changed (a source, a linked timer, a note); the id names that state, so each change is news once.
 */
export function incidentPressEvent(i: Incident): VigilEvent {
  const eventId = `incident.updated:${i.id}:press:${incidentSources(i).join('+')}:${i.linkedTimers?.length ?? 0}:${i.panicNotes?.length ?? 0}`;
  return { name: 'incident.updated', eventId, userId: i.userId, toAdmins: true, ...incidentPayloads(eventId, i) };
}
/**
 * A timer joined the person's open incident (one open SOS per person: a second expiry while one
 * is open): moderators see the incident with its sources and linked timers; nobody is texted again.
 */
export function incidentJoinedEvent(i: Incident, timerId: string): VigilEvent {
  const eventId = `incident.updated:${i.id}:joined:${timerId}`;
  return { name: 'incident.updated', eventId, userId: i.userId, toAdmins: true, ...incidentPayloads(eventId, i) };
}
/** A moderator note: `incident.updated` with the note, to moderators only (the owner does not see notes or who wrote them). */
export function noteEvent(i: Incident, note: IncidentNote): VigilEvent {
  const eventId = `incident.updated:${i.id}:note:${note.id}`;
  return {
    name: 'incident.updated',
    eventId,
    userId: i.userId,
    toAdmins: true,
    adminsOnly: true,
    payload: { eventId, incident: incidentView(i, maskPhone), note: noteView(note) },
  };
}
