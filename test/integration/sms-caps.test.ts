/**
 * SMS caps against abuse, on the real parts wired as main.ts wires them — SQLite store,
 * sweeper, escalator, timer service, dispatcher, the real Twilio client against the fake
 * Twilio — with small caps and the store's clock in the test's hands (the 24 h window
 * rolls without waiting a day). The allowance arithmetic itself is in test/unit/sms-caps.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SmsBudget } from '../../src/app/sms-budget.js';
import { TimerService } from '../../src/app/timers.js';
import { contactId } from '../../src/domain/contact.js';
import type { Delivery } from '../../src/domain/delivery.js';
import { makeLimits } from '../../src/domain/limits.js';
import { InProcessLock } from '../../src/lock/in-process-lock.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import type { VigilEvent } from '../../src/realtime/events.js';
import { TwilioCarrier } from '../../src/sms/twilio.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { FakeTwilio } from '../helpers/fake-twilio.js';
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
  const dir = mkdtempSync(join(tmpdir(), 'vigil-caps-'));
  let t = Date.parse('2025-03-01T10:00:00.000Z');
  const clock = () => t;
  const store = await SqliteStore.open({ file: join(dir, 'vigil.db'), clock });
  cleanups.push(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
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
          const { timer } = await timers.arm(caller, { durationSeconds: 60, locationName: 'Cafe' });
          t += 61_000;
          const report = await sweeper.sweep();
          expect(report.escalated).toBe(1);
          await dispatcher.tick();
          await dispatcher.drain();
          const incident = (await store.incidentForTimer(timer.id))!;
          return { timerId: timer.id, incidentId: incident.id, deliveries: await store.deliveriesFor([incident.id]) };
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

describe('per-incident cap (SOS + all-clear together)', () => {
  it('holds: the SOS takes the first contacts of the list, the all-clear what is left', async () => {
    const w = await world({ maxPerIncident: 4, maxPerUserPerDay: 60 });

    // five contacts, cap four: the SOS reaches the first four, in the person's order
    const five = await w.person(5);
    const a = await five.sos();
    expect(
      sos(a.deliveries)
        .map((d) => d.contactId)
        .sort(),
    ).toEqual(
      five.contacts
        .slice(0, 4)
        .map((c) => c.id)
        .sort(),
    );
    expect(sos(a.deliveries).every((d) => d.status === 'sent')).toBe(true);
    expect(await five.checkIn(a.timerId)).toHaveLength(0); // nothing left for the all-clear
    expect(five.received()).toHaveLength(4);

    // three contacts, cap four: SOS to all three, all-clear to the first one only
    const three = await w.person(3);
    const b = await three.sos();
    expect(sos(b.deliveries)).toHaveLength(3);
    const clear = await three.checkIn(b.timerId);
    expect(clear.map((d) => d.contactId)).toEqual([three.contacts[0]!.id]);
    expect(clear[0]!.status).toBe('sent');
    expect(three.received()).toHaveLength(4);

    expect(await w.capped('per_incident')).toBe(1 + 4 + 2);
    expect(await w.capped('per_day')).toBe(0);
    // the incidents were opened and reached moderators either way
    expect(w.events.filter((e) => e.name === 'sos.triggered' && e.toAdmins)).toHaveLength(2);
  });

  it('a repaired escalation creates nothing more than the first run did', async () => {
    const w = await world({ maxPerIncident: 2, maxPerUserPerDay: 60 });
    const p = await w.person(4);
    const a = await p.sos();
    expect(sos(a.deliveries)).toHaveLength(2);
    const timer = (await w.store.getTimer(a.timerId))!;
    const { escalator } = testWorkers(w.store, {
      metrics: w.metrics,
      smsBudget: new SmsBudget(w.store, { maxPerIncident: 2, maxPerUserPerDay: 60 }),
    });
    await escalator.escalate(timer, 1);
    expect((await w.store.deliveriesFor([a.incidentId])).map((d) => d.key).sort()).toEqual(a.deliveries.map((d) => d.key).sort());
  });
});

describe('per-person cap (rolling 24 h)', () => {
  it('holds: repeated timers stop reaching the contacts once the day budget is spent; the window rolls', async () => {
    const w = await world({ maxPerIncident: 12, maxPerUserPerDay: 5 });
    const p = await w.person(3);

    const first = await p.sos(); // first SOS of the window: in full
    expect(sos(first.deliveries)).toHaveLength(3);

    w.advance(HOUR);
    const second = await p.sos(); // 3 used: 2 left → the first two contacts
    expect(
      sos(second.deliveries)
        .map((d) => d.contactId)
        .sort(),
    ).toEqual(
      p.contacts
        .slice(0, 2)
        .map((c) => c.id)
        .sort(),
    );
    // the all-clear answers an SOS that went out: not held by the day cap
    expect(await p.checkIn(second.timerId)).toHaveLength(2);

    w.advance(HOUR);
    const third = await p.sos(); // 7 used: nothing left
    expect(third.deliveries).toHaveLength(0);
    expect(
      w.events.filter((e) => e.name === 'sos.triggered' && (e.payload.incident as { id: string }).id === third.incidentId),
    ).toHaveLength(1);
    expect((await w.store.getTimer(third.timerId))?.escalation).toBe('done');

    // a spam run of 1-minute timers changes nothing for the contacts
    for (let i = 0; i < 5; i++) {
      w.advance(2 * 60_000);
      expect((await p.sos()).deliveries).toHaveLength(0);
    }
    expect(p.received()).toHaveLength(3 + 2 + 2);

    // the window rolls: once the first incident's 3 texts are older than 24 h, 4 remain (2 SOS + 2 all-clear) → 1 left
    w.advance(DAY - 2 * HOUR - 10 * 60_000 + 60_000);
    expect(sos((await p.sos()).deliveries)).toHaveLength(1);
    // a quiet day later, the next SOS is the first of its window again: in full
    w.advance(DAY + HOUR);
    expect(sos((await p.sos()).deliveries)).toHaveLength(3);

    expect(await w.capped('per_day')).toBe(1 + 3 + 5 * 3 + 2);
    expect(await w.capped('per_incident')).toBe(0);
  });

  it('the first SOS of the day always goes out in full, even above the day cap', async () => {
    const w = await world({ maxPerIncident: 12, maxPerUserPerDay: 2 });
    const p = await w.person(5);
    expect(sos((await p.sos()).deliveries)).toHaveLength(5);
    w.advance(HOUR);
    expect((await p.sos()).deliveries).toHaveLength(0);
    expect(p.received()).toHaveLength(5);
  });

  it('capping is reported as a warning that names no number and no text', async () => {
    const w = await world({ maxPerIncident: 12, maxPerUserPerDay: 1 });
    const p = await w.person(2);
    await p.sos();
    w.advance(HOUR);
    await p.sos();
    const warnings = w.lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'SMS cap reached: deliveries over the cap were not created');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      level: 40,
      kind: 'sos',
      reason: 'per_day',
      created: 0,
      capped: 2,
      smsInLast24h: 2,
      maxPerUserPerDay: 1,
    });
    const all = w.lines.join('\n');
    for (const phone of p.phones) expect(all).not.toContain(phone.slice(2));
    expect(all).not.toContain('did not check in');
    expect(await w.metrics.registry.metrics()).toMatch(/^vigil_sms_capped_total\{reason="per_day",replica="caps"\} 2$/m);
  });
});
