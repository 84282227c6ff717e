/**
 * Group commit: the store operations that let a sweep escalate a claimed batch and a
 * dispatcher record a batch of outcomes with a constant number of writes, instead of
 * several commits per timer or per SMS. Part of `Store` (./port.ts).
 */
import type { Contact } from '../domain/contact.js';
import type { Delivery, Recipient } from '../domain/delivery.js';
import type { Incident } from '../domain/incident.js';
import type { ContactSettings } from '../domain/locale.js';
import type { Timer } from '../domain/timer.js';

/** One contact who gets the SOS of an escalation; the delivery key is made from the incident the store keeps. */
export interface SosRecipient extends Recipient {
  body: string;
  /** W3C traceparent stored with the delivery (the send continues the escalation's trace) */
  traceparent?: string;
  /** held back (the contact declined or opted out): stored `superseded` with this `lastError`, never sent */
  held?: string;
}

export interface EscalationItem {
  /** an expired timer whose escalation is pending */
  timer: Timer;
  /** the sweep fence recorded on a new incident */
  fence: number;
  /** id of the incident if this item creates it (an existing incident of the timer keeps its own) */
  incidentId: string;
  /** SOS recipients, in the person's order; a delivery exists once per (incident, contact) */
  recipients: SosRecipient[];
  /**
   * false (DURESS_TEXT_CONTACTS=false): when the timer's own incident, as found by the write, is a
   * duress incident (a duress check-in took the expired timer over), no recipient gets a delivery
   */
  duressTexts?: boolean;
}

export interface EscalationResult {
  timerId: string;
  /** the timer's one incident (created by this batch or found) */
  incident: Incident;
  created: boolean;
  /** this batch moved the escalation pending → done (false: already done by someone else) */
  marked: boolean;
  /** the person already had another open incident: the timer joined it (see Store.openIncident) */
  joined?: boolean;
}

export interface DeliveryOutcome {
  status: 'sent' | 'pending' | 'failed' | 'dead';
  carrier: string;
  providerMessageId?: string;
  error?: string;
  nextAttemptAt?: Date;
  /** the carrier may have taken it although the attempt did not say so (sticky once set) */
  maybeAccepted?: boolean;
}

export interface AttemptRecord {
  key: string;
  attempt: number;
  outcome: DeliveryOutcome;
}

export interface BatchStore {
  /**
   * Escalate a batch: per item, open the incident (unique per timer; insert or keep the existing
   * one), insert its SOS deliveries (unique per key `incidentId:contactId:sos`; existing ones kept)
   * and CAS the escalation pending → done. One transaction (SQLite) or a constant number of bulk
   * writes (MongoDB); every step is idempotent, so a repeat or a crash half-way is harmless.
   * Results in the order of `items`.
   */
  escalateBatch(items: EscalationItem[]): Promise<EscalationResult[]>;
  /** The incidents of these timers (those that exist). */
  incidentsForTimers(timerIds: string[]): Promise<Incident[]>;
  /** Contacts of many people at once (a person without contacts maps to `[]`). */
  contactsOf(userIds: string[]): Promise<Map<string, Contact[]>>;
  /** The contact settings of many people at once (a person without any maps to `{}`). */
  contactSettingsOf(userIds: string[]): Promise<Map<string, ContactSettings>>;
  /** SMS counted against the caps, per person: deliveries created for each since `since`. */
  countDeliveriesSinceMany(userIds: string[], since: Date): Promise<Map<string, number>>;
  /** The earliest deadline of a live timer (index-backed), or null when none is live. */
  nextDeadline(): Promise<Date | null>;
  /** recordAttempt for many deliveries in one write; each entry answers as recordAttempt would, in order. */
  recordAttempts(list: AttemptRecord[]): Promise<(Delivery | null)[]>;
}
