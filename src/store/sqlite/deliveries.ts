/**
 * Delivery operations of the SQLite store (SQL in ./deliveries-statements.ts): one record per
 * (incident, contact, kind), leased by the dispatcher, its outcome recorded with a CAS on
 * (key, status = 'sending', attempts).
 */
import type { Delivery, DeliveryStatus } from '../../domain/delivery.js';
import type { Incident } from '../../domain/incident.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import type { DeliveryOutcome, NewDelivery } from '../port.js';
import { read, write, type Ctx } from './ctx.js';
import { attemptParams, deliveryInsertParams, toDelivery, type DeliveryRow } from './rows.js';

const deliveryOrNull = (row: unknown): Delivery | null => (row ? toDelivery(row as DeliveryRow) : null);

/** Insert one text unless its key exists (also a step of the group commit: ./batch.ts). */
export function insertDeliveryRow(c: Ctx, incident: Pick<Incident, 'id' | 'userId'>, d: NewDelivery, now: number): void {
  c.st.deliveryInsert.run(deliveryInsertParams(incident, d, now));
}

/** The outcome of one attempt, CAS on the attempt the claim counted (also the group commit's: ./batch.ts). */
export function recordAttemptRow(c: Ctx, key: string, attempt: number, o: DeliveryOutcome, now: number): Delivery | null {
  return deliveryOrNull(c.st.deliveryRecordAttempt.get(attemptParams(key, attempt, o, now)));
}

export const addDeliveries = write((c, incident: Incident, list: NewDelivery[]): Delivery[] => {
  const now = c.clock();
  c.db
    .transaction(() => {
      for (const d of list) insertDeliveryRow(c, incident, d, now);
    })
    .immediate();
  return (c.st.deliveriesOfIncident.all(incident.id) as DeliveryRow[]).map(toDelivery);
});

export const deliveriesFor = read((c, incidentIds: string[]): Delivery[] => {
  if (incidentIds.length === 0) return [];
  const out: Delivery[] = [];
  // page by page, as before: the order is by (created_at, key) within each page of ids
  for (let i = 0; i < incidentIds.length; i += PAGE_SIZE) {
    const rows = c.st.deliveriesOfIncidents.all(JSON.stringify(incidentIds.slice(i, i + PAGE_SIZE))) as DeliveryRow[];
    out.push(...rows.map(toDelivery));
  }
  return out;
});

export const getDelivery = read((c, key: string): Delivery | null => deliveryOrNull(c.st.deliveryByKey.get(key)));

export const claimDeliveries = write((c, limit: number, leaseMs: number): Delivery[] =>
  (c.st.deliveriesClaim.all({ now: c.clock(), leaseMs, limit }) as DeliveryRow[]).map(toDelivery),
);

export const recordAttempt = write((c, key: string, attempt: number, o: DeliveryOutcome): Delivery | null =>
  recordAttemptRow(c, key, attempt, o, c.clock()),
);

export const supersedePendingSos = write((c, incidentId: string): Delivery[] =>
  (c.st.deliveriesSupersedeSos.all({ incidentId, now: c.clock() }) as DeliveryRow[]).map(toDelivery),
);

export const supersedeClaimed = write((c, key: string, attempt: number, reason: string): Delivery | null =>
  deliveryOrNull(c.st.deliverySupersedeClaimed.get({ key, attempt, reason, now: c.clock() })),
);

export const releaseClaim = write((c, key: string, attempt: number, dueAt: Date): Delivery | null =>
  deliveryOrNull(c.st.deliveryReleaseClaim.get({ key, attempt, due: dueAt.getTime(), now: c.clock() })),
);

export const applyReceipt = write(
  (c, providerMessageId: string, to: 'sent' | 'delivered' | 'failed', from: readonly DeliveryStatus[]): Delivery | null => {
    if (from.length === 0) return null;
    return deliveryOrNull(c.st.deliveryApplyReceipt.get({ pid: providerMessageId, to, from: JSON.stringify(from), now: c.clock() }));
  },
);

export const countDeliveriesSince = read(
  (c, userId: string, since: Date): number => (c.st.deliveriesCountSince.get(userId, since.getTime()) as { n: number }).n,
);

export const deliveryBacklog = read((c): { pending: number; oldestDue?: Date; dead: number } => {
  const p = c.st.deliveriesOpen.get() as { n: number; oldest: number | null };
  const d = c.st.deliveriesDead.get() as { n: number };
  return p.oldest === null ? { pending: p.n, dead: d.n } : { pending: p.n, oldestDue: new Date(p.oldest), dead: d.n };
});
