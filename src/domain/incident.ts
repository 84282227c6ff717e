/** Incident rules. Pure. */
import type { GeoPoint } from './timer.js';

export const INCIDENT_STATUSES = ['active', 'acknowledged', 'resolved', 'false_alarm'] as const;
export type IncidentStatus = (typeof INCIDENT_STATUSES)[number];
export const OPEN_INCIDENT: readonly IncidentStatus[] = ['active', 'acknowledged'];

/**
 * Where the all-clear of a false alarm stands: the incident is its own outbox. The CAS to
 * `false_alarm` records `pending`; creating the all-clears, superseding unsent SOS texts
 * and publishing the update end with `done`. Absent: no all-clear owed.
 */
export type AllClearState = 'pending' | 'done';

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
  location?: GeoPoint;
  displayName?: string;
  /** fence of the sweep that opened it */
  fence: number;
  allClear?: AllClearState;
  /** when retention removed its place, coordinates and display name (absent: not yet) */
  redactedAt?: Date;
}

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
