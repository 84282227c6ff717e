/**
 * Storage port of the safety features: the panic SOS, the warning before a deadline and the
 * person's notification inbox. Part of `Store` (./port.ts); each method one atomic write.
 */
import type { Incident } from '../domain/incident.js';
import type { InboxPosition, NewNotification, Notification } from '../domain/notification.js';
import type { GeoPoint, Timer } from '../domain/timer.js';
import type { WarningWindow } from '../domain/warning.js';

/** An Idempotency-Key and the fingerprint of the body it came with (as `IdempotencyClaim` in ./port.ts). */
export interface PanicKey {
  key: string;
  fingerprint: string;
}

export interface NewPanic {
  /** id of the incident if one has to be opened */
  incidentId: string;
  userId: string;
  displayName?: string;
  locationName?: string;
  location?: GeoPoint;
  /** what the person wrote with the press: kept on the incident (`panicNotes`), also when the press attaches */
  note?: string;
  /** what raised it: the panic button (default), or a check-in sent with the duress PIN */
  source?: 'panic' | 'duress';
}

export type PanicResult =
  /**
   * A new incident. `timer`: the person's live timer, expired by this panic with its escalation
   * pending (or a timer the sweep had already expired whose incident was not open yet): the
   * incident is that timer's, so the sweep can never open a second one for it.
   */
  | { kind: 'created'; incident: Incident; timer?: Timer }
  /** the person already had an open incident: `panic` is now among its sources; a live timer was linked to it */
  | { kind: 'attached'; incident: Incident; sourceAdded: boolean; timer?: Timer }
  /** this Idempotency-Key already raised (or attached) this incident; it is answered as it is now */
  | { kind: 'replayed'; incident: Incident }
  /** the key was used by this person for another SOS body */
  | { kind: 'idempotency_mismatch' };

export interface Warned {
  /** the timer, stamped `warnedAt` by this claim */
  timer: Timer;
  /** the inbox entry recorded for the warning (absent when it already existed) */
  notification?: Notification;
}

export interface NotificationQuery {
  unread?: boolean;
  /** keyset: only notifications older than this position (newest first) */
  before?: InboxPosition;
  limit?: number;
}

export interface SafetyStore {
  /**
   * The panic button, atomic against the sweep and other panics: attach to the person's open
   * incident, else take over their live (or just expired, not yet escalated) timer, else open an
   * incident of its own. Never two open incidents of one person from this path.
   */
  raisePanic(p: NewPanic, idem?: PanicKey): Promise<PanicResult>;
  /** Panic incidents whose SOS texts are still pending (crash repair), oldest first. */
  pendingPanicTexts(limit: number): Promise<Incident[]>;
  /** CAS panicTexts pending → done. */
  markPanicTexted(incidentId: string): Promise<boolean>;
  /** Timers resolved with the duress PIN whose silent SOS is still owed (crash repair), oldest check-in first. */
  pendingDuress(limit: number): Promise<Timer[]>;
  /** CAS duressPending set → cleared, once the owed SOS is open (or joined the person's open one). */
  markDuressRaised(timerId: string): Promise<boolean>;
  /**
   * CAS up to `limit` live timers in the warning window (domain/warning.ts) → `warnedAt` stamped,
   * each warned once per deadline, with their inbox entry (`warning:<timerId>:<n>`) where the store can.
   */
  claimWarnings(limit: number, window: WarningWindow): Promise<Warned[]>;
  /** Record a notification unless this person already has one with its key; `created` says which. */
  addNotification(n: NewNotification): Promise<{ notification: Notification; created: boolean }>;
  /** `addNotification` for several at once (one write on SQLite), answers in order; a key repeated in the list is created once. */
  addNotifications(list: NewNotification[]): Promise<{ notification: Notification; created: boolean }[]>;
  /** The person's notifications, newest first (createdAt, id). */
  listNotifications(userId: string, q?: NotificationQuery): Promise<Notification[]>;
  /** Mark one as read (idempotent: a read one stays as it was); `null` when not this person's. */
  markNotificationRead(userId: string, id: string): Promise<Notification | null>;
  /** Mark every unread one as read; how many changed. */
  markAllNotificationsRead(userId: string): Promise<number>;
}
