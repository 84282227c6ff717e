/**
 * Re-keying contact ids on the MongoDB store (the port: ../port-contact-ids.ts). MongoDB has no
 * transaction here (FerretDB v1 has none), so the re-key is made of idempotent steps recorded in
 * one document (./contact-ids-schema.ts), person by person in id order:
 *
 *   1. decide the person's map (old id → new id) and record it in the journal;
 *   2. for each of their deliveries with an old id: copy its audit lines, then the delivery, under
 *      the new key (a copy already there counts as done), then delete the old ones;
 *   3. rewrite the ids in their contact list;
 *   4. move the cursor past them and clear the journal.
 *
 * A crash at any step is resumed from the journal with the same map: a row already moved is
 * not found under its old id any more, a copy already made is not made twice. Replicas starting
 * at once take turns through a lease on that document; the others wait for it to finish.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ContactIdKeyMismatch, needsRekey, rekeyMap, type ContactIdKey, type StoredContactId } from '../../domain/contact.js';
import { deliveryKey } from '../../domain/delivery.js';
import type { RekeyResult, RekeyStep } from '../port-contact-ids.js';
import type { KeyingDoc, RekeyPair } from './contact-ids-schema.js';
import { isDuplicateKey } from './errors.js';
import type { ContactsDoc, DeliveryDoc } from './schemas.js';
import type { AuditDoc } from './moderation-schemas.js';
import { insertOptions, type Ctx } from './writes.js';

const ID = 'contactIds';
/** how long a re-keying process holds the turn without renewing it (renewed at each person) */
const LEASE_MS = 60_000;
/** how often a process waiting for another's re-key looks again */
const WAIT_MS = 250;

export async function rekeyContactIds(ctx: Ctx, key: ContactIdKey, onStep?: (s: RekeyStep) => void): Promise<RekeyResult> {
  const { keying } = ctx.m;
  const w = { writeConcern: ctx.wc };
  // absent: every id was derived with the legacy hash (the data predates keyed ids, or there is none)
  await keying.updateOne({ _id: ID }, { $setOnInsert: { scheme: 'sha256' } }, { upsert: true, ...w }).exec();
  const owner = randomUUID();
  for (;;) {
    const state = await read(ctx);
    if (state.target === undefined && !needsRekey(state.scheme, key)) return noop(key);
    if (await takeTurn(ctx, owner)) break;
    await sleep(WAIT_MS);
  }
  try {
    return await rekeyHolding(ctx, key, owner, onStep);
  } finally {
    // the turn is given back at once, also when the re-key failed (a process that dies holds it until its lease lapses)
    await keying
      .updateOne({ _id: ID, owner }, { $unset: { owner: 1, leaseUntil: 1 } }, w)
      .exec()
      .catch(() => undefined);
  }
}

async function rekeyHolding(ctx: Ctx, key: ContactIdKey, owner: string, onStep?: (s: RekeyStep) => void): Promise<RekeyResult> {
  const { keying } = ctx.m;
  const w = { writeConcern: ctx.wc };
  const state = await read(ctx);
  if (state.target === undefined) {
    if (!needsRekey(state.scheme, key)) return noop(key);
    await keying.updateOne({ _id: ID, owner }, { $set: { target: key.fingerprint, cursor: '' } }, w).exec();
  } else if (state.target !== key.fingerprint) {
    throw new ContactIdKeyMismatch(
      `CONTACT_ID_KEY: a re-key of the contact ids to another key (fingerprint ${state.target}) did not finish; start with that key to finish it first`,
    );
  }
  const done: RekeyResult = { from: state.scheme, to: key.fingerprint, people: 0, contacts: 0, deliveries: 0, audit: 0 };
  let cursor = state.cursor ?? '';
  if (state.journal) {
    await applyMap(ctx, state.journal.userId, state.journal.pairs, done, onStep);
    cursor = await personDone(ctx, owner, state.journal.userId, done, onStep);
  }
  for (let userId = await nextPerson(ctx, cursor); userId !== undefined; userId = await nextPerson(ctx, cursor)) {
    const map = rekeyMap(userId, await storedIds(ctx, userId), key);
    const pairs: RekeyPair[] = [...map].map(([from, to]) => ({ from, to }));
    const journaled = await keying
      .updateOne({ _id: ID, owner }, { $set: { journal: { userId, pairs }, leaseUntil: await leaseEnd(ctx) } }, w)
      .exec();
    if (journaled.matchedCount === 0) throw lostTurn();
    onStep?.({ step: 'mapped', userId, ids: pairs.length });
    await applyMap(ctx, userId, pairs, done, onStep);
    cursor = await personDone(ctx, owner, userId, done, onStep);
  }
  await keying
    .updateOne(
      { _id: ID, owner },
      { $set: { scheme: key.fingerprint }, $unset: { target: 1, cursor: 1, journal: 1, owner: 1, leaseUntil: 1 } },
      w,
    )
    .exec();
  return done;
}

const noop = (key: ContactIdKey): RekeyResult => ({
  from: key.fingerprint,
  to: key.fingerprint,
  people: 0,
  contacts: 0,
  deliveries: 0,
  audit: 0,
});

const lostTurn = () => new Error('contact id re-key: another process took over the re-key (this one held it past its lease)');

async function read(ctx: Ctx): Promise<KeyingDoc> {
  const d = await ctx.m.keying.findById(ID).lean<KeyingDoc>().exec();
  if (!d) throw new Error('contact id re-key: the keying record is missing');
  return d;
}

async function leaseEnd(ctx: Ctx): Promise<Date> {
  return new Date((await ctx.now()).getTime() + LEASE_MS);
}

/** Whether this process now holds the turn (free, lapsed, or already its own). */
async function takeTurn(ctx: Ctx, owner: string): Promise<boolean> {
  const now = await ctx.now();
  const r = await ctx.m.keying
    .updateOne(
      { _id: ID, $or: [{ owner: { $exists: false } }, { owner }, { leaseUntil: { $lt: now } }] },
      { $set: { owner, leaseUntil: new Date(now.getTime() + LEASE_MS) } },
      { writeConcern: ctx.wc },
    )
    .exec();
  return r.matchedCount === 1;
}

async function personDone(ctx: Ctx, owner: string, userId: string, done: RekeyResult, onStep?: (s: RekeyStep) => void): Promise<string> {
  const r = await ctx.m.keying
    .updateOne({ _id: ID, owner }, { $set: { cursor: userId }, $unset: { journal: 1 } }, { writeConcern: ctx.wc })
    .exec();
  if (r.matchedCount === 0) throw lostTurn();
  done.people++;
  onStep?.({ step: 'person', userId });
  return userId;
}

/** The first person after `cursor` (id order) with contacts or deliveries. */
async function nextPerson(ctx: Ctx, cursor: string): Promise<string | undefined> {
  const [c, d] = await Promise.all([
    ctx.m.contacts
      .findOne({ _id: { $gt: cursor } }, { _id: 1 })
      .sort({ _id: 1 })
      .lean<{ _id: string }>()
      .exec(),
    ctx.m.deliveries
      .findOne({ userId: { $gt: cursor } }, { userId: 1 })
      .sort({ userId: 1 })
      .lean<{ userId: string }>()
      .exec(),
  ]);
  const ids = [c?._id, d?.userId].filter((x): x is string => x !== undefined).sort();
  return ids[0];
}

async function storedIds(ctx: Ctx, userId: string): Promise<StoredContactId[]> {
  const [list, deliveries] = await Promise.all([
    ctx.m.contacts.findById(userId).lean<ContactsDoc>().exec(),
    ctx.m.deliveries
      .find({ userId }, { contactId: 1, phone: 1, redactedAt: 1 })
      .lean<Pick<DeliveryDoc, 'contactId' | 'phone' | 'redactedAt'>[]>()
      .exec(),
  ]);
  return [
    ...(list?.contacts ?? []).map((c) => ({ id: c.id, phone: c.phone })),
    ...deliveries.map((d) => ({ id: d.contactId, ...(d.redactedAt ? {} : { phone: d.phone }) })),
  ];
}

/** A copy as it is stored (an anonymised delivery has an empty name and text): no casting, no validation. */
const asStored = (ctx: Ctx) => ({ ...insertOptions(ctx, true), lean: true as const });

async function insertOnce<T>(insert: () => Promise<T>): Promise<void> {
  try {
    await insert();
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
}

async function applyMap(ctx: Ctx, userId: string, pairs: RekeyPair[], done: RekeyResult, onStep?: (s: RekeyStep) => void): Promise<void> {
  const map = new Map(pairs.map((p) => [p.from, p.to]));
  const w = { writeConcern: ctx.wc };
  const deliveries = await ctx.m.deliveries
    .find({ userId, contactId: { $in: [...map.keys()] } })
    .lean<DeliveryDoc[]>()
    .exec();
  for (const d of deliveries) {
    const from = d.contactId;
    const to = map.get(from) ?? from;
    const newKey = deliveryKey(d.incidentId, to, d.kind);
    for (const a of await ctx.m.audit.find({ target: d._id }).lean<AuditDoc[]>().exec()) {
      await insertOnce(() => ctx.m.audit.insertMany([{ ...a, _id: a._id.replace(d._id, newKey), target: newKey }], asStored(ctx)));
      done.audit += (await ctx.m.audit.deleteOne({ _id: a._id }, w).exec()).deletedCount;
    }
    const moved: DeliveryDoc = {
      ...d,
      _id: newKey,
      contactId: to,
      ...(d.providerMessageId ? { providerMessageId: d.providerMessageId.replace(from, to) } : {}),
      ...(d.earlierMessageIds ? { earlierMessageIds: d.earlierMessageIds.map((id) => id.replace(from, to)) } : {}),
    };
    await insertOnce(() => ctx.m.deliveries.insertMany([moved], asStored(ctx)));
    onStep?.({ step: 'delivery', userId });
    done.deliveries += (await ctx.m.deliveries.deleteOne({ _id: d._id }, w).exec()).deletedCount;
  }
  const list = await ctx.m.contacts.findById(userId).lean<ContactsDoc>().exec();
  if (list?.contacts.some((c) => map.has(c.id))) {
    done.contacts += list.contacts.filter((c) => map.has(c.id)).length;
    await ctx.m.contacts
      .updateOne({ _id: userId }, { $set: { contacts: list.contacts.map((c) => ({ ...c, id: map.get(c.id) ?? c.id })) } }, w)
      .exec();
  }
}
