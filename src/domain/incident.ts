/** Incident rules. Pure. */
import type { ContactAck } from './inbound-sms.js';
import type { GeoPoint, Meeting } from './timer.js';

export const INCIDENT_STATUSES = ['active', 'acknowledged', 'resolved', 'false_alarm'] as const;
export type IncidentStatus = (typeof INCIDENT_STATUSES)[number];
export const OPEN_INCIDENT: readonly IncidentStatus[] = ['active', 'acknowledged'];

/**
 * Where the all-clear of a false alarm stands: the incident is its own outbox. The CAS to
 * `false_alarm` records `pending`; creating the all-clears, superseding unsent SOS texts
 * and publishing the update end with `done`. Absent: no all-clear owed.
 */
export type AllClearState = 'pending' | 'done';

/**
 * What raised an incident: a timer that ran out, the person's panic button, or a check-in or
 * cancel sent with their duress PIN (silent: nothing the person's phone reads shows it).
 */
export const INCIDENT_SOURCES = ['timer', 'panic', 'duress'] as const;
export type IncidentSource = (typeof INCIDENT_SOURCES)[number];

/** The sources of an incident, first the one that opened it; absent in the record means a timer alone. */
/**
 * A panic incident with no timer behind it still fills the unique `timerId` slot, with this
 * prefix and its own id; the wire view leaves `timerId` out for it.
 */
export const PANIC_SLOT = 'panic:';
export const panicSlot = (incidentId: string): string => `${PANIC_SLOT}${incidentId}`;
export const hasTimer = (i: Pick<Incident, 'timerId'>): boolean => !i.timerId.startsWith(PANIC_SLOT);

export const incidentSources = (i: Pick<Incident, 'sources'>): IncidentSource[] => i.sources ?? ['timer'];

/** A duress incident is silent: its events and texts' events go to moderators only (docs/security.md, "Duress code"). */
export const isDuress = (i: Pick<Incident, 'sources'>): boolean => incidentSources(i).includes('duress');
/** Duress incidents get ids of their own shape, so a delivery (keyed by its incident id) is known silent without a read. */
export const DURESS_ID_PREFIX = 'drs';
export const isDuressIncidentId = (incidentId: string): boolean => incidentId.startsWith(`${DURESS_ID_PREFIX}_`);
/**
 * A timer's escalation texts nobody when its own incident was opened by a duress check-in (which
 * took the expired timer over) and DURESS_TEXT_CONTACTS is off (`duressTexts` false). A timer that
 * joined a person's open incident is not this case.
 */
export const quietDuress = (duressTexts: boolean | undefined, incidentId: string, joined: boolean | undefined): boolean =>
  duressTexts === false && !joined && isDuressIncidentId(incidentId);

export interface Incident {
  id: string;
  timerId: string;
  userId: string;
  status: IncidentStatus;
  /** the deadline that passed */
  deadline: Date;
  createdAt: Date;
  updatedAt: Date;
  acknowledgedAt?: Date;
  acknowledgedBy?: string;
  resolvedAt?: Date;
  resolvedBy?: string;
  locationName?: string;
  /** where the SOS text said the person was: the freshest live fix at escalation, else the point given on arming */
  location?: GeoPoint;
  displayName?: string;
  /** whom the person was meeting, copied from the timer */
  meeting?: Meeting;
  /** fence of the sweep that opened it */
  fence: number;
  allClear?: AllClearState;
  /** what raised it, first the one that opened it; absent: a timer alone (see `incidentSources`) */
  sources?: IncidentSource[];
  /**
   * A panic incident with no timer behind it is the outbox of its SOS texts: `pending` from
   * the write that opens it until its deliveries exist (the sweep completes it after a crash).
   */
  panicTexts?: 'pending' | 'done';
  /**
   * Timers that joined this open incident after it was opened (one open SOS per person: a
   * second expiry, or a panic that ended the person's live timer), besides `timerId`. Each can
   * check in ("I'm safe" ends this incident) and post fixes; the trail covers them all.
   */
  linkedTimers?: string[];
  /** what the person wrote with each panic press, oldest first (moderators; the first one is in the SOS text) */
  panicNotes?: PanicNote[];
  /** contacts who replied YES ("I'm on it"), once each, oldest first; not the moderator's `acknowledgedBy` */
  contactAcks?: ContactAck[];
  /** when retention removed its place, coordinates and display name (absent: not yet) */
  redactedAt?: Date;
}

export interface PanicNote {
  text: string;
  at: Date;
}

/** At most this many notes are kept on one incident (a press repeated in a panic adds one each). */
export const MAX_PANIC_NOTES = 10;

/** The timers whose fixes make this incident's trail: its own (or its panic slot), then those that joined it. */
export const trailTimersOf = (i: Pick<Incident, 'timerId' | 'linkedTimers'>): string[] => [i.timerId, ...(i.linkedTimers ?? [])];

export type IncidentCommand = 'acknowledge' | 'resolve' | 'false_alarm';

export type IncidentDecision =
  { kind: 'apply'; from: readonly IncidentStatus[]; to: IncidentStatus } | { kind: 'noop' } | { kind: 'conflict' };

const TARGET: Record<IncidentCommand, IncidentStatus> = {
  acknowledge: 'acknowledged',
  resolve: 'resolved',
  false_alarm: 'false_alarm',
};

export function decideIncident(command: IncidentCommand, status: IncidentStatus): IncidentDecision {
  const to = TARGET[command];
  if (status === to) return { kind: 'noop' };
  if (command === 'acknowledge') return status === 'active' ? { kind: 'apply', from: ['active'], to } : { kind: 'conflict' };
  return OPEN_INCIDENT.includes(status) ? { kind: 'apply', from: OPEN_INCIDENT, to } : { kind: 'conflict' };
}
