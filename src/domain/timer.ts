/**
 * Timer rules. Pure: no I/O, no clock reads. Stores turn a `Transition` into one
 * compare-and-swap ("move X from one of `from` to `to`").
 */
export const TIMER_STATUSES = ['active', 'extended', 'safe', 'cancelled', 'expired'] as const;
export type TimerStatus = (typeof TIMER_STATUSES)[number];

/** States in which the deadline is still running. */
export const LIVE: readonly TimerStatus[] = ['active', 'extended'];
export const isLive = (s: TimerStatus): boolean => LIVE.includes(s);

/**
 * Where the escalation of an expired timer stands: the timer row is its own outbox.
 * `failed`: it failed too many times in a row and is no longer retried every tick; it
 * waits for a moderator (dead letter, listed in the admin API, counted in metrics).
 */
export type EscalationState = 'none' | 'pending' | 'done' | 'failed';
export const ESCALATION_STATES = ['none', 'pending', 'done', 'failed'] as const satisfies readonly EscalationState[];

export interface GeoPoint {
  lat: number;
  lng: number;
}

/** Whom the person is meeting (all optional); seen by the person and moderators, by contacts only if configured. */
export interface Meeting {
  withUserId?: string;
  name?: string;
  /** E.164 */
  phone?: string;
}

export interface Timer {
  id: string;
  userId: string;
  status: TimerStatus;
  startedAt: Date;
  expiresAt: Date;
  resolvedAt?: Date;
  updatedAt: Date;
  locationName?: string;
  location?: GeoPoint;
  /** display name of the person, from the token at arm time; used in SOS texts */
  displayName?: string;
  /** IANA time zone given at arm time: the SOS text says the deadline in it (else the contact list's zone) */
  timeZone?: string;
  extensions: number;
  escalation: EscalationState;
  incidentId?: string;
  /** fence number of the sweep that expired the timer (0 when swept without a lock) */
  expiredByFence?: number;
  /** escalations of this timer that failed (reset by none: a dead letter keeps its count) */
  escalationAttempts?: number;
  /** the last escalation error */
  escalationError?: string;
  /** W3C traceparent of the request that armed it: the escalation continues that trace */
  traceparent?: string;
  meeting?: Meeting;
  /** when the person was warned that this deadline is near (cleared by an extension) */
  warnedAt?: Date;
  /**
   * Resolved with the duress PIN, and its silent SOS not opened yet (docs/security.md, "Duress
   * code"): set by the resolving CAS itself, cleared once the incident is open; the sweep opens
   * what a crash left owed. Never in any view of the timer.
   */
  duressPending?: boolean;
}

export type TimerCommand = 'extend' | 'safe' | 'cancel' | 'expire';

/**
 * What a command does to a timer in a given state:
 * - `apply`: CAS from `from` to `to`;
 * - `noop`: the command already took effect, answer with the current state;
 * - `false_alarm`: I'm-safe after the SOS: the timer stays expired, the incident resolves;
 * - `conflict`: the command cannot apply in this state (409 with the current state).
 */
export type Decision =
  { kind: 'apply'; from: readonly TimerStatus[]; to: TimerStatus } | { kind: 'noop' } | { kind: 'false_alarm' } | { kind: 'conflict' };

export const TARGET: Record<TimerCommand, TimerStatus> = {
  extend: 'extended',
  safe: 'safe',
  cancel: 'cancelled',
  expire: 'expired',
};

export function decide(command: TimerCommand, status: TimerStatus): Decision {
  if (isLive(status)) return { kind: 'apply', from: LIVE, to: TARGET[command] };
  switch (command) {
    case 'safe':
      if (status === 'safe') return { kind: 'noop' };
      if (status === 'expired') return { kind: 'false_alarm' };
      return { kind: 'conflict' };
    case 'cancel':
      return status === 'cancelled' ? { kind: 'noop' } : { kind: 'conflict' };
    case 'expire':
      // the sweep skips anything not live; no error, nothing to do
      return { kind: 'noop' };
    case 'extend':
      return { kind: 'conflict' };
  }
}
