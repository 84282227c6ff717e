/**
 * Store port for a person's own data (docs/privacy.md, "Your data"): everything held about
 * them, read at once for `GET /v1/me/export`, and its erasure for `DELETE /v1/me`.
 */
import type { Contact } from '../domain/contact.js';
import type { ContactSettings } from '../domain/locale.js';
import type { Incident } from '../domain/incident.js';
import type { StoredFix } from '../domain/location.js';
import type { Notification } from '../domain/notification.js';
import type { Timer } from '../domain/timer.js';

export interface PersonalData {
  /** every timer of theirs, oldest first */
  timers: Timer[];
  /** the stored location fixes of those timers, by timer and time */
  fixes: StoredFix[];
  contacts: Contact[];
  /** the list's default language and time zone */
  contactSettings: ContactSettings;
  /** whether they set a duress PIN (the PIN is kept only as a hash, which is never exported) */
  duressPinSet: boolean;
  /** their inbox, oldest first */
  notifications: Notification[];
  /** incidents about them (their SOS), oldest first */
  incidents: Incident[];
  /** Idempotency-Keys recorded for their requests (arming, commands, panic presses) */
  idempotencyRecords: number;
}

/** How many records an erasure removed (or, for incidents, deliveries and audit lines, re-named). */
export interface ErasedCounts {
  timers: number;
  fixes: number;
  contacts: number;
  notifications: number;
  idempotencyRecords: number;
  /** their duress PIN's hash (0 or 1) */
  duressPin: number;
  /** kept for the moderators' review, their person now the pseudonym (retention anonymises them on its schedule) */
  incidents: number;
  deliveries: number;
  auditLines: number;
}

export type ErasureResult =
  | { kind: 'erased'; counts: ErasedCounts }
  /** an incident of theirs is open: nothing is erased (they may ask again once it is closed) */
  | { kind: 'incident_open'; incidentId: string }
  /** a timer of theirs is live: nothing is erased (cancel it or check in first) */
  | { kind: 'timer_live'; timerId: string };

export interface PersonalDataStore {
  /** Everything the store holds about `userId` as the subject. */
  personalData(userId: string): Promise<PersonalData>;
  /**
   * Erase `userId`'s timers, their fixes, contacts, inbox and idempotency records; their
   * incidents, the deliveries of those and the audit lines about them keep only `pseudonym`
   * in place of the user id (a revocation line's id and target included). Refused, changing
   * nothing, while an incident of theirs is open or a timer of theirs live. SQLite: one
   * transaction. MongoDB: one write per kind, checks first; a repeat finishes what a crash left.
   */
  erasePerson(userId: string, pseudonym: string): Promise<ErasureResult>;
}
