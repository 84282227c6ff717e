/** What the console reads from the API and the events (see src/realtime/events.ts), checked at the edge. */
export type IncidentStatus = 'active' | 'acknowledged' | 'resolved' | 'false_alarm';
export type DeliveryStatus = 'pending' | 'sending' | 'sent' | 'delivered' | 'failed' | 'dead' | 'superseded';
export type TimerStatus = 'active' | 'extended' | 'safe' | 'cancelled' | 'expired';

export interface GeoPoint {
  lat: number;
  lng: number;
}

export interface Meeting {
  withUserId?: string;
  name?: string;
  phone?: string;
}

export interface Fix {
  lat: number;
  lng: number;
  accuracyM?: number;
  at: string;
}

export interface Incident {
  id: string;
  /** absent for a panic with no timer behind it */
  timerId?: string;
  userId: string;
  status: IncidentStatus;
  deadline: string;
  createdAt: string;
  updatedAt: string;
  acknowledgedAt?: string;
  acknowledgedBy?: string;
  resolvedAt?: string;
  resolvedBy?: string;
  locationName?: string;
  location?: GeoPoint;
  displayName?: string;
  meeting?: Meeting;
  /** what opened it (absent from a server before the panic button) */
  source?: IncidentSource;
  /** everything that raised it, first the one that opened it */
  sources?: IncidentSource[];
  /** timers that joined this open incident after it opened (one open SOS per person) */
  linkedTimerIds?: string[];
  /** what the person wrote with each panic press, oldest first (plain text) */
  panicNotes?: PanicNote[];
}

/** The person's own words with a panic press. */
export interface PanicNote {
  text: string;
  at: string;
}

export type IncidentSource = 'timer' | 'panic' | 'duress';

export interface Delivery {
  key: string;
  incidentId: string;
  contactId: string;
  contactName: string;
  phone: string;
  kind: 'sos' | 'all_clear' | 'moved';
  status: DeliveryStatus;
  attempts: number;
  carrier?: string;
  lastError?: string;
  nextAttemptAt?: string;
  updatedAt?: string;
  /** how many times a moderator sent it again */
  resends?: number;
}

/** A moderator note on an incident (moderators only). */
export interface Note {
  id: string;
  incidentId: string;
  author: string;
  text: string;
  createdAt: string;
}

export interface IncidentWithDeliveries extends Incident {
  deliveries: Delivery[];
  /** absent from a server older than notes */
  notes?: Note[];
}

export interface Timer {
  id: string;
  userId: string;
  status: TimerStatus;
  startedAt: string;
  expiresAt: string;
  resolvedAt?: string;
  updatedAt?: string;
  locationName?: string;
  location?: GeoPoint;
  extensions: number;
  incidentId?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (o: Obj, k: string) => typeof o[k] === 'string';
const OPT_STR = (o: Obj, k: string) => o[k] === undefined || typeof o[k] === 'string';

const isPanicNote = (v: unknown): v is PanicNote => isObj(v) && str(v, 'text') && str(v, 'at');
const optList = (o: Obj, k: string, guard: (x: unknown) => boolean) =>
  o[k] === undefined || (Array.isArray(o[k]) && (o[k] as unknown[]).every(guard));

export function isIncident(v: unknown): v is Incident {
  return (
    isObj(v) &&
    ['id', 'userId', 'status', 'deadline', 'updatedAt'].every((k) => str(v, k)) &&
    ['locationName', 'displayName', 'acknowledgedBy', 'acknowledgedAt'].every((k) => OPT_STR(v, k)) &&
    optList(v, 'linkedTimerIds', (x) => typeof x === 'string') &&
    optList(v, 'panicNotes', isPanicNote)
  );
}

export function isFix(v: unknown): v is Fix {
  return isObj(v) && typeof v.lat === 'number' && typeof v.lng === 'number' && str(v, 'at');
}

export function isDelivery(v: unknown): v is Delivery {
  return isObj(v) && ['key', 'incidentId', 'contactName', 'phone', 'status'].every((k) => str(v, k)) && typeof v.attempts === 'number';
}

export function isNote(v: unknown): v is Note {
  return isObj(v) && ['id', 'incidentId', 'author', 'text', 'createdAt'].every((k) => str(v, k));
}

export function isIncidentWithDeliveries(v: unknown): v is IncidentWithDeliveries {
  return (
    isIncident(v) &&
    Array.isArray((v as unknown as Obj).deliveries) &&
    ((v as unknown as Obj).deliveries as unknown[]).every(isDelivery) &&
    ((v as unknown as Obj).notes === undefined ||
      (Array.isArray((v as unknown as Obj).notes) && ((v as unknown as Obj).notes as unknown[]).every(isNote)))
  );
}

export function isTimer(v: unknown): v is Timer {
  return isObj(v) && ['id', 'userId', 'status', 'startedAt', 'expiresAt'].every((k) => str(v, k));
}

/** `{ [field]: T }` out of an untyped payload, or undefined. */
export function field<T>(v: unknown, name: string, guard: (x: unknown) => x is T): T | undefined {
  if (!isObj(v)) return undefined;
  const x = v[name];
  return guard(x) ? x : undefined;
}

export function eventIdOf(v: unknown): string | undefined {
  return isObj(v) && typeof v.eventId === 'string' ? v.eventId : undefined;
}

export const isOpen = (s: IncidentStatus): boolean => s === 'active' || s === 'acknowledged';
export const isLiveTimer = (s: TimerStatus): boolean => s === 'active' || s === 'extended';

/** One line of the audit (`GET /v1/admin/audit`). */
export interface AuditLine {
  id: string;
  at: string;
  actor: string;
  action: string;
  target: string;
  incidentId?: string;
  person?: string;
  reason?: string;
}

const optStr = (v: Record<string, unknown>, k: string) => v[k] === undefined || typeof v[k] === 'string';

export const isAuditLine = (v: unknown): v is AuditLine =>
  isObj(v) &&
  typeof v.id === 'string' &&
  typeof v.at === 'string' &&
  typeof v.actor === 'string' &&
  typeof v.action === 'string' &&
  typeof v.target === 'string' &&
  optStr(v, 'incidentId') &&
  optStr(v, 'person') &&
  optStr(v, 'reason');
