/**
 * Row ↔ domain mapping for the SQLite adapter, one mapper per record type whichever path uses
 * it (one row at a time or a group commit: ./batch.ts). Times are epoch milliseconds.
 */
import { isContactState, type Contact } from '../../domain/contact.js';
import type { Delivery, DeliveryKind, DeliveryStatus } from '../../domain/delivery.js';
import type { AllClearState, Incident, IncidentSource, IncidentStatus } from '../../domain/incident.js';
import { isLanguage, isTimeZone, type ContactSettings } from '../../domain/locale.js';
import { sweepSlot } from '../../domain/sweep-shard.js';
import type { EscalationState, Meeting, Timer, TimerStatus } from '../../domain/timer.js';
import { compact } from '../compact.js';
import type { DeliveryOutcome, NewDelivery, NewTimer } from '../port.js';

export interface TimerRow {
  id: string;
  user_id: string;
  status: TimerStatus;
  started_at: number;
  expires_at: number;
  resolved_at: number | null;
  updated_at: number;
  location_name: string | null;
  lat: number | null;
  lng: number | null;
  display_name: string | null;
  time_zone: string | null;
  extensions: number;
  escalation: EscalationState;
  incident_id: string | null;
  expired_by_fence: number | null;
  escalation_attempts: number;
  escalation_error: string | null;
  traceparent: string | null;
  /** JSON Meeting */
  meeting: string | null;
  warned_at: number | null;
  duress_pending: 1 | null;
}

export interface IncidentRow {
  id: string;
  timer_id: string;
  user_id: string;
  status: IncidentStatus;
  deadline: number;
  created_at: number;
  updated_at: number;
  acknowledged_at: number | null;
  acknowledged_by: string | null;
  resolved_at: number | null;
  resolved_by: string | null;
  location_name: string | null;
  lat: number | null;
  lng: number | null;
  display_name: string | null;
  fence: number;
  all_clear: AllClearState | null;
  meeting: string | null;
  /** JSON array of sources; NULL: a timer alone */
  sources: string | null;
  panic_texts: 'pending' | 'done' | null;
  /** JSON array of timer ids that joined it; NULL: none */
  linked_timers: string | null;
  /** JSON array of {text, at}; NULL: none */
  panic_notes: string | null;
  /** JSON array of {contactId, name, at, messageSid}; NULL: none (version 18) */
  contact_acks?: string | null;
  redacted_at: number | null;
}

export interface DeliveryRow {
  key: string;
  incident_id: string;
  user_id: string;
  contact_id: string;
  contact_name: string;
  phone: string;
  kind: DeliveryKind;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number;
  lease_until: number | null;
  carrier: string | null;
  provider_message_id: string | null;
  /** JSON array of the message ids before a resend */
  earlier_message_ids: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  maybe_accepted: number;
  traceparent: string | null;
  resends: number;
  redacted_at: number | null;
}

export interface ContactRow {
  id: string;
  name: string;
  phone: string;
  language: string | null;
  state: string;
}

const date = (ms: number | null): Date | undefined => (ms === null ? undefined : new Date(ms));
const opt = <T>(v: T | null): T | undefined => (v === null ? undefined : v);
const meeting = (json: string | null): Meeting | undefined => (json === null ? undefined : (JSON.parse(json) as Meeting));
const point = (lat: number | null, lng: number | null) => (lat === null || lng === null ? undefined : { lat, lng });

export function toTimer(r: TimerRow): Timer {
  return compact({
    id: r.id,
    userId: r.user_id,
    status: r.status,
    startedAt: new Date(r.started_at),
    expiresAt: new Date(r.expires_at),
    resolvedAt: date(r.resolved_at),
    updatedAt: new Date(r.updated_at),
    locationName: opt(r.location_name),
    location: point(r.lat, r.lng),
    displayName: opt(r.display_name),
    timeZone: opt(r.time_zone),
    extensions: r.extensions,
    escalation: r.escalation,
    incidentId: opt(r.incident_id),
    expiredByFence: opt(r.expired_by_fence),
    escalationAttempts: r.escalation_attempts > 0 ? r.escalation_attempts : undefined,
    escalationError: opt(r.escalation_error),
    traceparent: opt(r.traceparent),
    meeting: meeting(r.meeting),
    warnedAt: date(r.warned_at),
    duressPending: r.duress_pending === 1 ? true : undefined,
  });
}

export function toIncident(r: IncidentRow): Incident {
  return compact({
    id: r.id,
    timerId: r.timer_id,
    userId: r.user_id,
    status: r.status,
    deadline: new Date(r.deadline),
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
    acknowledgedAt: date(r.acknowledged_at),
    acknowledgedBy: opt(r.acknowledged_by),
    resolvedAt: date(r.resolved_at),
    resolvedBy: opt(r.resolved_by),
    locationName: opt(r.location_name),
    location: point(r.lat, r.lng),
    displayName: opt(r.display_name),
    fence: r.fence,
    allClear: opt(r.all_clear),
    meeting: meeting(r.meeting),
    panicTexts: opt(r.panic_texts),
    sources: r.sources === null ? undefined : (JSON.parse(r.sources) as IncidentSource[]),
    linkedTimers: r.linked_timers === null ? undefined : (JSON.parse(r.linked_timers) as string[]),
    panicNotes:
      r.panic_notes === null
        ? undefined
        : (JSON.parse(r.panic_notes) as { text: string; at: number }[]).map((n) => ({ text: n.text, at: new Date(n.at) })),
    contactAcks:
      r.contact_acks === null || r.contact_acks === undefined
        ? undefined
        : (JSON.parse(r.contact_acks) as { contactId: string; name: string; at: number; messageSid: string }[]).map((a) => ({
            ...a,
            at: new Date(a.at),
          })),
    redactedAt: date(r.redacted_at),
  });
}

export function toDelivery(r: DeliveryRow): Delivery {
  return compact({
    key: r.key,
    incidentId: r.incident_id,
    userId: r.user_id,
    contactId: r.contact_id,
    contactName: r.contact_name,
    phone: r.phone,
    kind: r.kind,
    body: r.body,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: new Date(r.next_attempt_at),
    leaseUntil: date(r.lease_until),
    carrier: opt(r.carrier),
    providerMessageId: opt(r.provider_message_id),
    earlierMessageIds: r.earlier_message_ids === null ? undefined : (JSON.parse(r.earlier_message_ids) as string[]),
    lastError: opt(r.last_error),
    maybeAccepted: r.maybe_accepted === 1 ? true : undefined,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
    traceparent: opt(r.traceparent),
    resends: r.resends > 0 ? r.resends : undefined,
    redactedAt: date(r.redacted_at),
  });
}

export const toContact = (r: ContactRow): Contact => ({
  id: r.id,
  name: r.name,
  phone: r.phone,
  ...(r.language && isLanguage(r.language) ? { language: r.language } : {}),
  state: isContactState(r.state) ? r.state : 'pending',
});

/** Where and with whom, as the columns of a timer and of its incident (the incident copies them from the timer). */
function placeParams(x: Pick<Timer, 'locationName' | 'location' | 'displayName' | 'meeting'>) {
  return {
    locationName: x.locationName ?? null,
    lat: x.location?.lat ?? null,
    lng: x.location?.lng ?? null,
    displayName: x.displayName ?? null,
    meeting: x.meeting ? JSON.stringify(x.meeting) : null,
  };
}

/** The parameters of `timerInsert`. */
export function timerInsertParams(t: NewTimer, now: number) {
  return {
    id: t.id,
    userId: t.userId,
    startedAt: t.startedAt.getTime(),
    expiresAt: t.expiresAt.getTime(),
    now,
    ...placeParams(t),
    traceparent: t.traceparent ?? null,
    slot: sweepSlot(t.id),
    timeZone: t.timeZone ?? null,
  };
}

/** The parameters of `incidentInsert` for the incident of an expired timer. */
export function incidentInsertParams(timer: Timer, fence: number, id: string, now: number) {
  return { id, timerId: timer.id, userId: timer.userId, deadline: timer.expiresAt.getTime(), now, ...placeParams(timer), fence };
}

/** The parameters of `deliveryInsert`: one text of `incident` (its id and person) to one contact. */
export function deliveryInsertParams(incident: Pick<Incident, 'id' | 'userId'>, d: NewDelivery, now: number) {
  // a plain literal of exactly the statement's parameters: a rest/spread copy made every insert of a burst slow
  return {
    key: d.key,
    incidentId: incident.id,
    userId: incident.userId,
    contactId: d.contactId,
    contactName: d.contactName,
    phone: d.phone,
    kind: d.kind,
    body: d.body,
    now,
    traceparent: d.traceparent ?? null,
    status: d.held ? 'superseded' : 'pending',
    lastError: d.held ?? null,
  };
}

/** The parameters of `deliveryRecordAttempt`: the outcome of attempt `attempt` of delivery `key`. */
export function attemptParams(key: string, attempt: number, o: DeliveryOutcome, now: number) {
  return {
    key,
    attempt,
    status: o.status,
    carrier: o.carrier,
    providerMessageId: o.providerMessageId ?? null,
    error: o.error ?? null,
    next: o.nextAttemptAt?.getTime() ?? null,
    maybeAccepted: o.maybeAccepted === true ? 1 : 0,
    now,
  };
}

export interface ContactSettingsRow {
  language: string | null;
  time_zone: string | null;
}

/** Values the API did not check (an older row, a hand edit) are left out: the texts fall back to the defaults. */
export const toContactSettings = (r: ContactSettingsRow | undefined): ContactSettings => ({
  ...(r?.language && isLanguage(r.language) ? { language: r.language } : {}),
  ...(r?.time_zone && isTimeZone(r.time_zone) ? { timeZone: r.time_zone } : {}),
});
