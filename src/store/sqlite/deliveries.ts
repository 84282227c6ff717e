/**
 * Delivery operations of the SQLite store (SQL in ./deliveries-statements.ts): one record per
 * (incident, contact, kind), leased by the dispatcher, its outcome recorded with a CAS on
 * (key, status = 'sending', attempts).
 */
import { EARLY_RECEIPT_KEEP_MS, receiptFrom, type Delivery, type DeliveryStatus } from '../../domain/delivery.js';
import type { Incident } from '../../domain/incident.js';
import { PAGE_SIZE } from '../../domain/paging.js';
import type { DeliveryOutcome, NewDelivery, ReceiptOutcome, ReceiptStatus } from '../port.js';
import { read, write, type Ctx } from './ctx.js';
import { attemptParams, deliveryInsertParams, toDelivery, type DeliveryRow } from './rows.js';

const deliveryOrNull = (row: unknown): Delivery | null => (row ? toDelivery(row as DeliveryRow) : null);

/** Insert one text unless its key exists (also a step of the group commit: ./batch.ts). */
export function insertDeliveryRow(c: Ctx, incident: Pick<Incident, 'id' | 'userId'>, d: NewDelivery, now: number): void {
  c.st.deliveryInsert.run(deliveryInsertParams(incident, d, now));
}

/**
 * The outcome of one attempt, CAS on the attempt the claim counted (also the group commit's:
 * ./batch.ts). A message the carrier took may have had its receipt already: applied here, in
 * the same transaction, so a receipt and the outcome racing each other end the same either way.
 */
export function recordAttemptRow(c: Ctx, key: string, attempt: number, o: DeliveryOutcome, now: number): Delivery | null {
  const recorded = deliveryOrNull(c.st.deliveryRecordAttempt.get(attemptParams(key, attempt, o, now)));
  if (!recorded || o.status !== 'sent' || o.providerMessageId === undefined) return recorded;
  const pid = o.providerMessageId;
  const early = c.st.earlyReceiptOf.get({ pid, before: now - EARLY_RECEIPT_KEEP_MS }) as { status: ReceiptStatus } | undefined;
  if (!early) return recorded;
  c.st.earlyReceiptDrop.run(pid);
  const from = JSON.stringify(receiptFrom(early.status));
  return deliveryOrNull(c.st.deliveryApplyReceipt.get({ pid, to: early.status, from, now })) ?? recorded;
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
  c.db.transaction(() => recordAttemptRow(c, key, attempt, o, c.clock())).immediate(),
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

/** Most expired early receipts removed each time one is kept. */
const EXPIRE_BATCH = 100;

export const applyReceipt = write((c, pid: string, to: ReceiptStatus, from: readonly DeliveryStatus[]): ReceiptOutcome => {
  const run = c.db.transaction((): ReceiptOutcome => {
    const now = c.clock();
    const params = { pid, to, from: JSON.stringify(from), now };
    const moved = from.length === 0 ? null : deliveryOrNull(c.st.deliveryApplyReceipt.get(params));
    if (moved) return { result: 'applied', delivery: moved };
    if (c.st.deliveryByMessage.get(pid)) return { result: 'stale' };
    // no attempt has recorded this message (yet): its outcome is being written, or it was resent or re-claimed since
    c.st.earlyReceiptKeep.run(params);
    c.st.earlyReceiptsExpire.run({ before: now - EARLY_RECEIPT_KEEP_MS, limit: EXPIRE_BATCH });
    return { result: 'kept' };
  });
  return run.immediate();
});

export const countDeliveriesSince = read(
  (c, userId: string, since: Date): number => (c.st.deliveriesCountSince.get(userId, since.getTime()) as { n: number }).n,
);

export const deliveryBacklog = read((c): { pending: number; oldestDue?: Date; dead: number } => {
  const p = c.st.deliveriesOpen.get() as { n: number; oldest: number | null };
  const d = c.st.deliveriesDead.get() as { n: number };
  return p.oldest === null ? { pending: p.n, dead: d.n } : { pending: p.n, oldestDue: new Date(p.oldest), dead: d.n };
});
