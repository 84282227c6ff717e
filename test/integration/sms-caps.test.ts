/**
 * SMS caps against abuse, on the real parts wired as main.ts wires them — SQLite store,
 * sweeper, escalator, timer service, dispatcher, live location, the real Twilio client against
 * the fake Twilio — with small caps and the store's clock in the test's hands (the 24 h window
 * rolls without waiting a day). Issue 35, item 14: an SOS and the text that ends it are never
 * held; a cap holds follow-ups only, counting texts handed to a carrier, and a held text says
 * why on the incident. The allowance arithmetic itself is in test/unit/sms-caps.test.ts.
 */
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocationService } from '../../src/app/location.js';
import { SmsBudget } from '../../src/app/sms-budget.js';
import { TimerService } from '../../src/app/timers.js';
import { contactId } from '../helpers/contact-ids.js';
import type { Delivery } from '../../src/domain/delivery.js';
import { makeLimits } from '../../src/domain/limits.js';
import { MemoryFixes } from '../../src/location/memory-fixes.js';
import { InProcessLock } from '../../src/lock/in-process-lock.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import type { VigilEvent } from '../../src/realtime/events.js';
import { TwilioCarrier } from '../../src/sms/twilio.js';
import { FakeTwilio } from '../helpers/fake-twilio.js';
import { tempSqliteStore } from '../helpers/sqlite-store.js';
import { testWorkers } from '../helpers/workers.js';
import { FROM } from './sms-support.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let tw: FakeTwilio;
beforeAll(async () => {
  tw = await FakeTwilio.start();
});
afterAll(async () => {
  await tw?.close();
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups.length = 0;
});

async function world(caps: { maxPerIncident: number; maxPerUserPerDay: number }) {
  let t = Date.parse('2025-03-01T10:00:00.000Z');
  const clock = () => t;
  const { store, cleanup } = await tempSqliteStore({ clock });
  cleanups.push(cleanup);
  const metrics = createMetrics({ replica: 'caps', collectDefault: false });
  const lines: string[] = [];
  const log = createLogger({ level: 'info' }, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) }));
  const smsBudget = new SmsBudget(store, caps, { log, metrics });
  const events: VigilEvent[] = [];
  const publisher = { publish: (e: VigilEvent) => void events.push(e) };
  const timers = new TimerService(
    store,
    publisher,
    makeLimits({ minSeconds: 1, maxSeconds: 86_400, maxExtensions: 10, maxTotalSeconds: 172_800 }),
    metrics,
    smsBudget,
  );
  const carrier = new TwilioCarrier({ accountSid: tw.accountSid, authToken: tw.authToken, from: FROM, baseUrl: tw.url, timeoutMs: 2000 });
  const { sweeper, dispatcher } = testWorkers(store, {
    lock: new InProcessLock(clock),
    carrier,
    metrics,
    log,
    events: publisher,
    smsBudget,
    sweep: { lockName: 'caps', lockTtlMs: 10_000, batchSize: 100, concurrency: 4, maxEscalationAttempts: 5 },
    dispatch: { maxInFlight: 50, leaseMs: 30_000, retry: { maxAttempts: 3, baseMs: 20, capMs: 200 } },
  });

  const location = new LocationService(
    store,
    new MemoryFixes(DAY, clock),
    publisher,
    smsBudget,
    { minIntervalMs: 0, perMinute: 1000, followUpMeters: 500, trailLimit: 100, flushMs: 60_000 },
    log,
  );

  let people = 0;
  return {
    store,
    events,
    lines,
    metrics,
    advance: (ms: number) => void (t += ms),
    /** a person with `n` contacts (numbers unique to this person) */
    async person(n: number) {
      const userId = `capped-${++people}-${Math.random().toString(36).slice(2, 8)}`;
      const base = `+1415${String(Math.floor(Math.random() * 900) + 100)}${String(people).padStart(2, '0')}`;
      const phones = Array.from({ length: n }, (_, i) => `${base}${String(i).padStart(2, '0')}`);
      const contacts = await store.replaceContacts(
        userId,
        phones.map((phone, i) => ({ id: contactId(userId, phone), name: `Contact ${i + 1}`, phone })),
      );
      const caller = { userId, displayName: 'Mara' };
      return {
        userId,
        phones,
        contacts,
        /** arm a 60 s timer, let it run out, sweep, send what was created; the incident's deliveries */
        async sos(): Promise<{ timerId: string; incidentId: string; deliveries: Delivery[] }> {
          const { timer } = await timers.arm(caller, { durationSeconds: 60, locationName: 'Cafe', location: { lat: 37.78, lng: -122.41 } });
          t += 61_000;
          const report = await sweeper.sweep();
          expect(report.escalated).toBe(1);
          await dispatcher.tick();
          await dispatcher.drain();
          const incident = (await store.incidentForTimer(timer.id))!;
          return { timerId: timer.id, incidentId: incident.id, deliveries: await store.deliveriesFor([incident.id]) };
        },
        /** a fix far from where the SOS said, on the open incident of `timerId`: the `moved` follow-up */
        async movedFar(timerId: string): Promise<Delivery[]> {
          const r = await location.post(caller, timerId, { lat: 37.9, lng: -122.1 });
          expect(r.kept).toBe(true);
          await dispatcher.tick();
          await dispatcher.drain();
          return (await store.deliveriesFor([r.incidentId!])).filter((d) => d.kind === 'moved');
        },
        /** arm, run out, sweep, then "I'm safe" before any text went out: the SOS is superseded unsent */
        async falseAlarmBeforeTexts(): Promise<Delivery[]> {
          const { timer } = await timers.arm(caller, { durationSeconds: 60, locationName: 'Cafe', location: { lat: 37.78, lng: -122.41 } });
          t += 61_000;
          expect((await sweeper.sweep()).escalated).toBe(1);
          const r = await timers.checkIn(caller, timer.id);
          return store.deliveriesFor([r.incident!.id]);
        },
        async checkIn(timerId: string): Promise<Delivery[]> {
          const r = await timers.checkIn(caller, timerId);
          expect(r.incident?.status).toBe('false_alarm');
          await dispatcher.tick();
          await dispatcher.drain();
          return (await store.deliveriesFor([r.incident!.id])).filter((d) => d.kind === 'all_clear');
        },
        /** what the carrier accepted for this person's contacts */
        received: () => tw.accepted.filter((m) => phones.includes(m.to)),
      };
    },
    async capped(reason: string): Promise<number> {
      const m = (await metrics.smsCapped.get()).values.find((x) => x.labels.reason === reason);
      return m?.value ?? 0;
    },
  };
}

const sos = (ds: Delivery[]) => ds.filter((d) => d.kind === 'sos');

describe('what a cap never holds: the SOS, and the text that ends it', () => {
  it('item 14: every contact gets the SOS and the all-clear, above the incident cap and the day cap, every time', async () => {
    const w = await world({ maxPerIncident: 4, maxPerUserPerDay: 5 });
    const five = await w.person(5);
    const a = await five.sos();
    expect(sos(a.deliveries)).toHaveLength(5);
    expect(sos(a.deliveries).every((d) => d.status === 'sent')).toBe(true);
    expect(await five.checkIn(a.timerId)).toHaveLength(5);
    // the day's texts are spent many times over: a genuine SOS later still reaches everyone
    w.advance(HOUR);
    const b = await five.sos();
    expect(sos(b.deliveries).map((d) => d.status)).toEqual(['sent', 'sent', 'sent', 'sent', 'sent']);
    expect(five.received()).toHaveLength(5 + 5 + 5);
    expect(await w.capped('per_incident')).toBe(0);
    expect(await w.capped('per_day')).toBe(0);
  });

  it('a repaired escalation creates nothing more than the first run did', async () => {
    const w = await world({ maxPerIncident: 2, maxPerUserPerDay: 60 });
    const p = await w.person(4);
    const a = await p.sos();
    expect(sos(a.deliveries)).toHaveLength(4);
    const timer = (await w.store.getTimer(a.timerId))!;
    const { escalator } = testWorkers(w.store, {
      metrics: w.metrics,
      smsBudget: new SmsBudget(w.store, { maxPerIncident: 2, maxPerUserPerDay: 60 }),
    });
    await escalator.escalate(timer, 1);
    expect((await w.store.deliveriesFor([a.incidentId])).map((d) => d.key).sort()).toEqual(a.deliveries.map((d) => d.key).sort());
  });
});

describe('what a cap holds: follow-ups', () => {
  it('item 14: caps count texts handed to a carrier: SOS texts superseded unsent do not spend the day; a held follow-up says why', async () => {
    const w = await world({ maxPerIncident: 12, maxPerUserPerDay: 3 });
    const p = await w.person(2);
    // three late check-ins: each SOS superseded before it went out (nothing handed to a carrier)
    for (let i = 0; i < 3; i++) {
      const ds = await p.falseAlarmBeforeTexts();
      expect(sos(ds).map((d) => d.status)).toEqual(['superseded', 'superseded']);
      w.advance(5 * 60_000);
    }
    expect(await w.store.countDeliveriesSince(p.userId, new Date(0))).toBe(0);
    // a real SOS: both texted (2 of the day's 3); then the person moves far: one follow-up fits, one is held
    const real = await p.sos();
    expect(sos(real.deliveries).map((d) => d.status)).toEqual(['sent', 'sent']);
    const moved = await p.movedFar(real.timerId);
    expect(moved.map((d) => d.status).sort()).toEqual(['sent', 'superseded']);
    const held = moved.find((d) => d.status === 'superseded')!;
    expect(held).toMatchObject({ lastError: 'held_per_day', attempts: 0 });
    expect(p.contacts.map((c) => c.id)).toContain(held.contactId);
    expect(p.received()).toHaveLength(3);
    expect(await w.capped('per_day')).toBe(1);
    // the held text is never sent, whatever dispatches later
    w.advance(HOUR);
    expect(p.received()).toHaveLength(3);
  });

  it('capping is reported as a warning that names no number and no text', async () => {
    const w = await world({ maxPerIncident: 12, maxPerUserPerDay: 2 });
    const p = await w.person(2);
    const real = await p.sos();
    await p.movedFar(real.timerId);
    const warnings = w.lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'SMS cap reached: follow-ups over the cap were recorded as held, not sent');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, kind: 'moved', reason: 'per_day', capped: 2, smsInLast24h: 2, maxPerUserPerDay: 2 });
    const all = w.lines.join('\n');
    for (const phone of p.phones) expect(all).not.toContain(phone.slice(2));
    expect(all).not.toContain('did not check in');
    expect(await w.metrics.registry.metrics()).toMatch(/^vigil_sms_capped_total\{reason="per_day",replica="caps"\} 2$/m);
  });
});
