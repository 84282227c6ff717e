/**
 * Group commit on SQLite (../port-batch.ts): a batch of escalations, or of delivery outcomes,
 * is one IMMEDIATE transaction, i.e. one commit and one fsync, instead of one per row. The rows
 * are written by the same single-row steps as the one-at-a-time operations (./incidents.ts,
 * ./deliveries.ts, ./timers.ts), so the unique indexes and the CAS conditions are the same; a
 * crash inside the transaction rolls all of it back. SQL of the batch reads: ./batch-statements.ts.
 */
import type { Contact } from '../../domain/contact.js';
import { newDelivery, type Delivery } from '../../domain/delivery.js';
import type { Incident } from '../../domain/incident.js';
import type { ContactSettings } from '../../domain/locale.js';
import type { AttemptRecord, EscalationItem, EscalationResult } from '../port-batch.js';
import { read, write } from './ctx.js';
import { insertDeliveryRow, recordAttemptRow } from './deliveries.js';
import { quietDuress } from '../../domain/incident.js';
import { openIncidentRow } from './incidents.js';
import { toContact, toContactSettings, toIncident, type ContactRow, type ContactSettingsRow, type IncidentRow } from './rows.js';
import { markEscalatedRow } from './timers.js';

export const escalateBatch = write((c, items: EscalationItem[]): EscalationResult[] => {
  if (items.length === 0) return [];
  const run = c.db.transaction((): EscalationResult[] => {
    const now = c.clock();
    return items.map(({ timer, fence, incidentId, recipients, duressTexts }) => {
      const { incident, created, joined } = openIncidentRow(c, timer, fence, incidentId, now);
      for (const r of quietDuress(duressTexts, incident.id, joined) ? [] : recipients)
        insertDeliveryRow(
          c,
          { id: incident.id, userId: timer.userId },
          newDelivery(incident.id, r, 'sos', r.body, { traceparent: r.traceparent, held: r.held }),
          now,
        );
      const marked = markEscalatedRow(c, timer.id, incident.id);
      return { timerId: timer.id, incident, created, marked, ...(joined ? { joined } : {}) };
    });
  });
  return run.immediate();
});

export const incidentsForTimers = read((c, timerIds: string[]): Incident[] => {
  if (timerIds.length === 0) return [];
  return (c.st.incidentsOfTimers.all(JSON.stringify(timerIds)) as IncidentRow[]).map(toIncident);
});

export const contactsOf = read((c, userIds: string[]): Map<string, Contact[]> => {
  const out = new Map<string, Contact[]>(userIds.map((u) => [u, []]));
  if (userIds.length === 0) return out;
  for (const r of c.st.contactsOfUsers.all(JSON.stringify([...new Set(userIds)])) as (ContactRow & { user_id: string })[])
    out.get(r.user_id)?.push(toContact(r));
  return out;
});

export const contactSettingsOf = read((c, userIds: string[]): Map<string, ContactSettings> => {
  const out = new Map<string, ContactSettings>(userIds.map((u) => [u, {}]));
  if (userIds.length === 0) return out;
  for (const r of c.st.contactSettingsOfUsers.all(JSON.stringify([...new Set(userIds)])) as (ContactSettingsRow & { user_id: string })[])
    out.set(r.user_id, toContactSettings(r));
  return out;
});

export const countDeliveriesSinceMany = read((c, userIds: string[], since: Date): Map<string, number> => {
  const out = new Map<string, number>(userIds.map((u) => [u, 0]));
  if (userIds.length === 0) return out;
  const rows = c.st.deliveriesCountSinceByUser.all({ users: JSON.stringify([...new Set(userIds)]), since: since.getTime() }) as {
    user_id: string;
    n: number;
  }[];
  for (const r of rows) out.set(r.user_id, r.n);
  return out;
});

export const nextDeadline = read((c): Date | null => {
  const r = c.st.nextDeadline.get() as { t: number | null };
  return r.t === null ? null : new Date(r.t);
});

export const recordAttempts = write((c, list: AttemptRecord[]): (Delivery | null)[] => {
  if (list.length === 0) return [];
  const run = c.db.transaction(() => {
    const now = c.clock();
    return list.map(({ key, attempt, outcome }) => recordAttemptRow(c, key, attempt, outcome, now));
  });
  return run.immediate();
});
