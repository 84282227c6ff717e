/** Document ↔ domain mapping for the MongoDB store: adapter-only fields never leave it. */
import { isContactState, type Contact } from '../../domain/contact.js';
import type { Delivery } from '../../domain/delivery.js';
import type { Incident } from '../../domain/incident.js';
import { isLanguage, isTimeZone, type ContactSettings } from '../../domain/locale.js';
import type { GeoPoint, Meeting, Timer } from '../../domain/timer.js';
import { compact } from '../compact.js';
import type { ContactsDoc, DeliveryDoc, IncidentDoc, TimerDoc } from './schemas.js';

const meeting = (m: Meeting | undefined): Meeting | undefined =>
  m ? compact({ withUserId: m.withUserId ?? undefined, name: m.name ?? undefined, phone: m.phone ?? undefined }) : undefined;
const point = (p: GeoPoint | undefined): GeoPoint | undefined => (p ? { lat: p.lat, lng: p.lng } : undefined);

export function toTimer(d: TimerDoc): Timer {
  return compact({
    id: d._id,
    userId: d.userId,
    status: d.status,
    startedAt: d.startedAt,
    expiresAt: d.expiresAt,
    resolvedAt: d.resolvedAt,
    updatedAt: d.updatedAt,
    locationName: d.locationName,
    location: point(d.location),
    displayName: d.displayName,
    timeZone: d.timeZone,
    extensions: d.extensions,
    escalation: d.escalation,
    incidentId: d.incidentId,
    expiredByFence: d.expiredByFence,
    escalationAttempts: d.escalationAttempts,
    escalationError: d.escalationError,
    traceparent: d.traceparent,
    meeting: meeting(d.meeting),
    warnedAt: d.warnedAt,
    duressPending: d.duressPending ? true : undefined,
  });
}

export function toIncident(d: IncidentDoc): Incident {
  return compact({
    id: d._id,
    timerId: d.timerId,
    userId: d.userId,
    status: d.status,
    deadline: d.deadline,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
    acknowledgedAt: d.acknowledgedAt,
    acknowledgedBy: d.acknowledgedBy,
    resolvedAt: d.resolvedAt,
    resolvedBy: d.resolvedBy,
    locationName: d.locationName,
    location: point(d.location),
    displayName: d.displayName,
    fence: d.fence,
    allClear: d.allClear,
    meeting: meeting(d.meeting),
    panicTexts: d.panicTexts,
    sources: d.sources && d.sources.length > 0 ? [...d.sources] : undefined,
    linkedTimers: d.linkedTimers && d.linkedTimers.length > 0 ? [...d.linkedTimers] : undefined,
    panicNotes: d.panicNotes && d.panicNotes.length > 0 ? d.panicNotes.map((n) => ({ text: n.text, at: n.at })) : undefined,
    contactAcks:
      d.contactAcks && d.contactAcks.length > 0
        ? d.contactAcks.map((a) => ({ contactId: a.contactId, name: a.name, at: a.at, messageSid: a.messageSid }))
        : undefined,
    redactedAt: d.redactedAt,
  });
}

export function toDelivery(d: DeliveryDoc): Delivery {
  return compact({
    key: d._id,
    incidentId: d.incidentId,
    userId: d.userId,
    contactId: d.contactId,
    contactName: d.contactName,
    phone: d.phone,
    kind: d.kind,
    body: d.body,
    status: d.status,
    attempts: d.attempts,
    nextAttemptAt: d.nextAttemptAt,
    leaseUntil: d.leaseUntil,
    carrier: d.carrier,
    providerMessageId: d.providerMessageId,
    earlierMessageIds: d.earlierMessageIds && d.earlierMessageIds.length > 0 ? [...d.earlierMessageIds] : undefined,
    lastError: d.lastError,
    maybeAccepted: d.maybeAccepted === true ? true : undefined,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
    traceparent: d.traceparent,
    resends: d.resends !== undefined && d.resends > 0 ? d.resends : undefined,
    redactedAt: d.redactedAt,
  });
}

export const toContact = (c: Contact): Contact => ({
  id: c.id,
  name: c.name,
  phone: c.phone,
  ...(c.language && isLanguage(c.language) ? { language: c.language } : {}),
  state: c.state && isContactState(c.state) ? c.state : 'pending',
});

/** Values the API did not check (an older document, a hand edit) are left out: the texts fall back to the defaults. */
export const toContactSettings = (d: Pick<ContactsDoc, 'language' | 'timeZone'> | null | undefined): ContactSettings => ({
  ...(d?.language && isLanguage(d.language) ? { language: d.language } : {}),
  ...(d?.timeZone && isTimeZone(d.timeZone) ? { timeZone: d.timeZone } : {}),
});
