/**
 * Group commit on SQLite (../port-batch.ts): a batch of escalations, or of delivery outcomes,
 * is one IMMEDIATE transaction, i.e. one commit and one fsync, instead of one per row. The rows
 * are written by the same single-row statements as the one-at-a-time operations, so the unique
 * indexes and the CAS conditions are the same; a crash inside the transaction rolls all of it back.
 */
import type Database from 'better-sqlite3';
import type { Contact } from '../../domain/contact.js';
import { deliveryKey, type Delivery } from '../../domain/delivery.js';
import type { Incident } from '../../domain/incident.js';
import type { AttemptRecord, EscalationItem, EscalationResult } from '../port-batch.js';
import { incidentInsertParams, toContact, toDelivery, toIncident, type ContactRow, type DeliveryRow, type IncidentRow } from './rows.js';
import type { BatchStatements } from './statements-batch.js';
import type { Statements } from './statements.js';

export interface BatchCtx {
  db: Database.Database;
  st: Statements;
  bst: BatchStatements;
  clock: () => number;
}

export function escalateBatch(c: BatchCtx, items: EscalationItem[]): EscalationResult[] {
  if (items.length === 0) return [];
  const run = c.db.transaction((): EscalationResult[] => {
    const now = c.clock();
    return items.map(({ timer, fence, incidentId, recipients }) => {
      const inserted = c.st.incidentInsert.get(incidentInsertParams(timer, fence, incidentId, now)) as IncidentRow | undefined;
      const incident = toIncident(inserted ?? (c.st.incidentByTimer.get(timer.id) as IncidentRow));
      for (const r of recipients)
        c.st.deliveryInsert.run({
          key: deliveryKey(incident.id, r.contactId, 'sos'),
          incidentId: incident.id,
          userId: timer.userId,
          contactId: r.contactId,
          contactName: r.contactName,
          phone: r.phone,
          kind: 'sos',
          body: r.body,
          now,
          traceparent: r.traceparent ?? null,
        });
      const marked = c.st.timerMarkEscalated.run(incident.id, timer.id).changes === 1;
      return { timerId: timer.id, incident, created: inserted !== undefined, marked };
    });
  });
  return run.immediate();
}

export function incidentsForTimers(c: BatchCtx, timerIds: string[]): Incident[] {
  if (timerIds.length === 0) return [];
  return (c.bst.incidentsOfTimers.all(JSON.stringify(timerIds)) as IncidentRow[]).map(toIncident);
}

export function contactsOf(c: BatchCtx, userIds: string[]): Map<string, Contact[]> {
  const out = new Map<string, Contact[]>(userIds.map((u) => [u, []]));
  if (userIds.length === 0) return out;
  for (const r of c.bst.contactsOfUsers.all(JSON.stringify([...new Set(userIds)])) as (ContactRow & { user_id: string })[])
    out.get(r.user_id)?.push(toContact(r));
  return out;
}

export function countDeliveriesSinceMany(c: BatchCtx, userIds: string[], since: Date): Map<string, number> {
  const out = new Map<string, number>(userIds.map((u) => [u, 0]));
  if (userIds.length === 0) return out;
  const rows = c.bst.deliveriesCountSinceByUser.all({ users: JSON.stringify([...new Set(userIds)]), since: since.getTime() }) as {
    user_id: string;
    n: number;
  }[];
  for (const r of rows) out.set(r.user_id, r.n);
  return out;
}

export function nextDeadline(c: BatchCtx): Date | null {
  const r = c.bst.nextDeadline.get() as { t: number | null };
  return r.t === null ? null : new Date(r.t);
}

export function recordAttempts(c: BatchCtx, list: AttemptRecord[]): (Delivery | null)[] {
  if (list.length === 0) return [];
  const run = c.db.transaction(() => {
    const now = c.clock();
    return list.map(({ key, attempt, outcome: o }) => {
      const row = c.st.deliveryRecordAttempt.get({
        key,
        attempt,
        status: o.status,
        carrier: o.carrier,
        providerMessageId: o.providerMessageId ?? null,
        error: o.error ?? null,
        next: o.nextAttemptAt?.getTime() ?? null,
        maybeAccepted: o.maybeAccepted === true ? 1 : 0,
        now,
      }) as DeliveryRow | undefined;
      return row ? toDelivery(row) : null;
    });
  });
  return run.immediate();
}
