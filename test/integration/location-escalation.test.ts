/**
 * The SOS reads the freshest fix when it is written, with its age: the escalator, the
 * location service and a SQLite store on one movable clock (no waiting for minutes to pass).
 * The cache falling over (Redis down) makes the SOS use the store's last flushed fix.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocationService } from '../../src/app/location.js';
import { SmsBudget } from '../../src/app/sms-budget.js';
import { contactId } from '../helpers/contact-ids.js';
import type { StoredFix } from '../../src/domain/location.js';
import { mapLink } from '../../src/domain/messages.js';
import { MemoryFixes } from '../../src/location/memory-fixes.js';
import type { LatestFixes } from '../../src/location/port.js';
import { createMetrics } from '../../src/metrics.js';
import type { VigilEvent } from '../../src/realtime/events.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Escalator } from '../../src/worker/escalator.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';
import { testWorkers } from '../helpers/workers.js';

const log = pino({ level: 'silent' });
const ARMED = { lat: 37.7749, lng: -122.4194 };
const MOVED = { lat: 37.8049, lng: -122.4094 };

let tmp: TempSqliteStore;
let store: SqliteStore;
let now: number;
const events: VigilEvent[] = [];

beforeEach(async () => {
  now = Date.parse('2030-06-01T18:00:00.000Z');
  tmp = await tempSqliteStore({ clock: () => now });
  store = tmp.store;
  events.length = 0;
});
afterEach(async () => {
  await tmp.cleanup();
});

function build(cache: LatestFixes) {
  const publisher = { publish: (e: VigilEvent) => void events.push(e) };
  const budget = new SmsBudget(store, { maxPerIncident: 12, maxPerUserPerDay: 60 });
  const location = new LocationService(
    store,
    cache,
    publisher,
    budget,
    { minIntervalMs: 0, perMinute: 1000, followUpMeters: 500, trailLimit: 100, flushMs: 60_000 },
    log,
  );
  const { escalator } = testWorkers(store, {
    events: location.flushingOnEnd(publisher),
    metrics: createMetrics({ replica: 't' }),
    log,
    smsBudget: budget,
    escalation: { location },
  });
  return { location, escalator };
}

async function armWithContact(userId: string) {
  await store.replaceContacts(userId, [{ id: contactId(userId, '+14155550101'), name: 'Sam', phone: '+14155550101' }]);
  const r = await store.armTimer({
    id: `tmr-${userId}`,
    userId,
    startedAt: new Date(now),
    expiresAt: new Date(now + 10 * 60_000),
    location: ARMED,
    displayName: 'Alice',
  });
  if (r.kind !== 'created') throw new Error(r.kind);
  return r.timer;
}

async function expireAndEscalate(escalator: Escalator, deadline: Date) {
  now = deadline.getTime() + 1;
  const [claimed] = await store.claimDueTimers(10, 1);
  if (!claimed) throw new Error('not claimed');
  await escalator.escalate(claimed, 1);
  const incident = await store.incidentForTimer(claimed.id);
  if (!incident) throw new Error('no incident');
  return { incident, deliveries: await store.deliveriesFor([incident.id]) };
}

describe('the SOS text at escalation time', () => {
  it('says where the person was last seen and how long ago ("last seen 2 min ago at …")', async () => {
    const { location, escalator } = build(new MemoryFixes(3_600_000, () => now));
    const timer = await armWithContact('alice');
    now += 8 * 60_000; // 18:08, two minutes before the deadline
    await location.post({ userId: 'alice' }, timer.id, { ...MOVED, accuracyM: 15 });
    const { incident, deliveries } = await expireAndEscalate(escalator, timer.expiresAt);
    const body = deliveries[0]?.body ?? '';
    expect(body).toContain(`Last seen 2 min ago at ${mapLink(MOVED)}`);
    // kept for the record (artifacts/ is git-ignored)
    mkdirSync('artifacts', { recursive: true });
    writeFileSync('artifacts/sos-text-with-moved-fix.txt', `${body}\n`);
    expect(body).not.toContain(mapLink(ARMED));
    expect(incident.location).toEqual(MOVED);
    // the escalation stored the fix it used (the trail is in the store, not only in the cache)
    expect((await store.lastFix(timer.id))?.lat).toBe(MOVED.lat);
  });

  it('a sweep group of three: each SOS carries its own person’s last fix (one cache read for the group)', async () => {
    const memory = new MemoryFixes(3_600_000, () => now);
    let reads = 0;
    const counted: LatestFixes = {
      get: (id) => memory.get(id),
      getMany: (ids) => {
        reads++;
        return memory.getMany(ids);
      },
      set: (f) => memory.set(f),
      close: () => memory.close(),
    };
    const { location, escalator } = build(counted);
    const [a, b, c] = [await armWithContact('ann'), await armWithContact('ben'), await armWithContact('cat')];
    now += 8 * 60_000;
    const ANN = { lat: 37.81, lng: -122.41 };
    const BEN = { lat: 37.71, lng: -122.31 };
    await location.post({ userId: 'ann' }, a.id, ANN);
    await location.post({ userId: 'ben' }, b.id, BEN);
    now = a.expiresAt.getTime() + 1;
    const claimed = await store.claimDueTimers(10, 1);
    expect(claimed).toHaveLength(3);
    await escalator.escalateBatch(claimed, 1);
    expect(reads).toBe(1);
    const bodyOf = async (timerId: string) => {
      const incident = await store.incidentForTimer(timerId);
      return (await store.deliveriesFor([incident!.id]))[0]?.body ?? '';
    };
    expect(await bodyOf(a.id)).toContain(mapLink(ANN));
    expect(await bodyOf(b.id)).toContain(mapLink(BEN));
    expect(await bodyOf(c.id)).toContain(`Last known location: ${mapLink(ARMED)}`);
    expect((await store.incidentForTimer(b.id))?.location).toEqual(BEN);
  });

  it('without any fix the SOS keeps the point given on arming', async () => {
    const { escalator } = build(new MemoryFixes(3_600_000, () => now));
    const timer = await armWithContact('bob');
    const { deliveries, incident } = await expireAndEscalate(escalator, timer.expiresAt);
    expect(deliveries[0]?.body).toContain(`Last known location: ${mapLink(ARMED)}`);
    expect(incident.location).toEqual(ARMED);
  });

  it('invariant 1: with the cache down the SOS uses the store’s last flushed fix, never an error', async () => {
    const memory = new MemoryFixes(3_600_000, () => now);
    let down = false;
    const flaky: LatestFixes = {
      get: (id) => (down ? Promise.reject(new Error('ECONNREFUSED')) : memory.get(id)),
      getMany: (ids) => (down ? Promise.reject(new Error('ECONNREFUSED')) : memory.getMany(ids)),
      set: (f: StoredFix) => (down ? Promise.reject(new Error('ECONNREFUSED')) : memory.set(f)),
      close: () => memory.close(),
    };
    const { location, escalator } = build(flaky);
    const timer = await armWithContact('carol');
    now += 60_000;
    await location.post({ userId: 'carol' }, timer.id, { ...MOVED, at: new Date(now) });
    await location.flushAll(); // the periodic flush stored it
    now += 60_000;
    // a later fix reached only the cache, and the cache (Redis) is flushed/down: that fix is lost
    const later = { lat: MOVED.lat + 0.01, lng: MOVED.lng };
    await memory.set({ ...later, timerId: timer.id, userId: 'carol', at: new Date(now) });
    down = true;
    const { deliveries } = await expireAndEscalate(escalator, timer.expiresAt);
    expect(deliveries[0]?.body).toContain(`Last seen 9 min ago at ${mapLink(MOVED)}`);
    // posting keeps working without the cache
    await expect(location.post({ userId: 'carol' }, timer.id, { ...later })).resolves.toMatchObject({ kept: true });
  });

  it('invariant 1: a fix the cache refuses is stored at once: the SOS and the trail end with it; the trail says it could not read the cache', async () => {
    const memory = new MemoryFixes(3_600_000, () => now);
    let down = false;
    const refuse = () => Promise.reject(new Error('ECONNREFUSED'));
    const flaky: LatestFixes = {
      get: (id) => (down ? refuse() : memory.get(id)),
      getMany: (ids) => (down ? refuse() : memory.getMany(ids)),
      set: (f: StoredFix) => (down ? refuse() : memory.set(f)),
      close: () => memory.close(),
    };
    const { location, escalator } = build(flaky);
    const timer = await armWithContact('dora');
    now += 60_000;
    expect((await location.ownTrail({ userId: 'dora' }, timer.id)).fresh).toBe(true);
    down = true;
    await location.post({ userId: 'dora' }, timer.id, { ...MOVED, at: new Date(now) });
    // not buffered on this replica only: in the store already, with no flush
    expect((await store.lastFix(timer.id))?.lat).toBe(MOVED.lat);
    expect(location.buffered()).toBe(0);
    const trail = await location.ownTrail({ userId: 'dora' }, timer.id);
    expect(trail).toMatchObject({ fresh: false, maxLagMs: 60_000 });
    expect(trail.fixes.at(-1)).toMatchObject({ lat: MOVED.lat });
    now += 60_000;
    const { deliveries } = await expireAndEscalate(escalator, timer.expiresAt);
    expect(deliveries[0]?.body).toContain(`at ${mapLink(MOVED)}`);
  });
});
