/**
 * After "I'm safe": the all-clear is never lost (the incident is its outbox, completed by
 * the request, its repeat or the sweeper), no SOS reaches a contact after the all-clear,
 * and an escalation that keeps failing is dead-lettered instead of retried every tick.
 * Real SQLite, the real timer service, sweeper, escalator and dispatcher as main.ts wires
 * them; the carrier is scripted per number so each interleaving is chosen, and the
 * store's clock is the test's, so backoffs pass without waiting.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { SmsBudget } from '../../src/app/sms-budget.js';
import { TimerService } from '../../src/app/timers.js';
import { contactId } from '../helpers/contact-ids.js';
import type { AttemptResult, Delivery } from '../../src/domain/delivery.js';
import { makeLimits } from '../../src/domain/limits.js';
import { InProcessLock } from '../../src/lock/in-process-lock.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import type { VigilEvent } from '../../src/realtime/events.js';
import type { Carrier, OutgoingSms } from '../../src/sms/port.js';
import type { Store } from '../../src/store/port.js';
import { tempSqliteStore } from '../helpers/sqlite-store.js';
import { eventually, startTestVigil } from '../helpers/vigil.js';
import { testWorkers } from '../helpers/workers.js';

type Step = 'ok' | 'hold' | { retryable: boolean; code: string };

/** A carrier whose answer per number is scripted; `hold` keeps the attempt open until released. */
class ScriptedCarrier implements Carrier {
  readonly name = 'scripted';
  readonly calls: OutgoingSms[] = [];
  private readonly scripts = new Map<string, Step[]>();
  private readonly held = new Map<string, (r: AttemptResult) => void>();

  script(phone: string, ...steps: Step[]): void {
    this.scripts.set(phone, steps);
  }

  holding(phone: string): boolean {
    return this.held.has(phone);
  }

  release(phone: string, step: Exclude<Step, 'hold'>): void {
    const resolve = this.held.get(phone);
    if (!resolve) throw new Error(`no attempt held for ${phone}`);
    this.held.delete(phone);
    resolve(this.result(phone, step));
  }

  /** what each number was sent, in order: 'sos' or 'all_clear' */
  to(phone: string): string[] {
    return this.calls.filter((c) => c.to === phone).map((c) => (c.idempotencyKey.endsWith(':all_clear') ? 'all_clear' : 'sos'));
  }

  async send(sms: OutgoingSms): Promise<AttemptResult> {
    this.calls.push(sms);
    const step = this.scripts.get(sms.to)?.shift() ?? 'ok';
    if (step === 'hold') return new Promise((resolve) => this.held.set(sms.to, resolve));
    return this.result(sms.idempotencyKey, step);
  }

  private result(key: string, step: Exclude<Step, 'hold'>): AttemptResult {
    return step === 'ok'
      ? { ok: true, carrier: this.name, providerMessageId: `pm:${key}:${this.calls.length}` }
      : { ok: false, carrier: this.name, ...step };
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups.length = 0;
});

/** The store with one method replaced (a fault injected around the real adapter, not a switch in it). */
function withFault<K extends keyof Store>(store: Store, method: K, fault: Store[K]): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === method) return fault;
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

async function world(opts: { escalatorStore?: (s: Store) => Store } = {}) {
  let t = Date.parse('2025-03-01T10:00:00.000Z');
  const clock = () => t;
  const { store, cleanup } = await tempSqliteStore({ clock });
  cleanups.push(cleanup);
  const metrics = createMetrics({ replica: 'allclear', collectDefault: false });
  metrics.observeStore(store);
  const lines: string[] = [];
  const log = createLogger({ level: 'info' }, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) }));
  const smsBudget = new SmsBudget(store, { maxPerIncident: 12, maxPerUserPerDay: 60 }, { log, metrics });
  const events: VigilEvent[] = [];
  const publisher = { publish: (e: VigilEvent) => void events.push(e) };
  const limits = makeLimits({ minSeconds: 1, maxSeconds: 86_400, maxExtensions: 10, maxTotalSeconds: 172_800 });
  const service = (s: Store) => new TimerService(s, publisher, limits, metrics, smsBudget);
  const timers = service(store);
  const carrier = new ScriptedCarrier();
  const { sweeper, dispatcher } = testWorkers(store, {
    lock: new InProcessLock(clock),
    carrier,
    metrics,
    log,
    events: publisher,
    smsBudget,
    sweep: { lockName: 'allclear', lockTtlMs: 10_000, batchSize: 100, concurrency: 4, maxEscalationAttempts: 3 },
    dispatch: { maxInFlight: 50, leaseMs: 30_000, retry: { maxAttempts: 3, baseMs: 1000, capMs: 1000 } },
    // backoff: exactly half the ceiling (1 s) after the first attempt
    overrides: { escalatorStore: opts.escalatorStore?.(store), random: () => 0.5 },
  });
  let people = 0;

  return {
    store,
    events,
    lines,
    metrics,
    carrier,
    sweeper,
    dispatcher,
    service,
    advance: (ms: number) => void (t += ms),
    /** one dispatch round: claim what is due, wait for every send to be recorded */
    async round(): Promise<number> {
      const n = await dispatcher.tick();
      await dispatcher.drain();
      return n;
    },
    /** a person with `n` contacts, a timer that ran out, swept: the SOS deliveries exist, none sent */
    async sos(n: number) {
      const userId = `ac-${++people}`;
      const phones = Array.from({ length: n }, (_, i) => `+1415555${String(people).padStart(2, '0')}${String(i).padStart(2, '0')}`);
      await store.replaceContacts(
        userId,
        phones.map((phone, i) => ({ id: contactId(userId, phone), name: `Contact ${i + 1}`, phone })),
      );
      const caller = { userId, displayName: 'Mara' };
      const { timer } = await timers.arm(caller, { durationSeconds: 60 });
      t += 61_000;
      expect((await sweeper.sweep()).escalated).toBe(1);
      const incident = (await store.incidentForTimer(timer.id))!;
      const deliveries = async (kind?: Delivery['kind']) =>
        (await store.deliveriesFor([incident.id])).filter((d) => !kind || d.kind === kind);
      return {
        userId,
        caller,
        phones,
        timerId: timer.id,
        incidentId: incident.id,
        deliveries,
        byPhone: async (p: string) => (await deliveries()).filter((d) => d.phone === p),
      };
    },
  };
}

/** The group-commit write of escalations refused as a whole (the one-at-a-time path is what the test faults). */
const groupFails = (store: Store): Store =>
  withFault(store, 'escalateBatch', async () => {
    throw new Error('injected: the group write was refused');
  });

const failOnce = (store: Store): { store: Store; failed: () => number } => {
  let failures = 0;
  const real = store.addDeliveries.bind(store);
  const faulty = withFault(store, 'addDeliveries', async (incident, list) => {
    if (failures === 0 && list.some((d) => d.kind === 'all_clear')) {
      failures++;
      throw new Error('injected: the store refused the write');
    }
    return real(incident, list);
  });
  return { store: faulty, failed: () => failures };
};

describe('invariant 4: the all-clear of a false alarm is never lost between two writes', () => {
  it('creating the all-clears fails once: the repeated request answers with the false alarm, queues every all-clear and publishes incident.updated', async () => {
    const w = await world();
    const p = await w.sos(2);
    expect(await w.round()).toBe(2); // both SOS texts went out
    const fault = failOnce(w.store);
    const timers = w.service(fault.store);

    await expect(timers.checkIn(p.caller, p.timerId)).rejects.toThrow(/injected/);
    expect(fault.failed()).toBe(1);
    expect(await w.store.getIncident(p.incidentId)).toMatchObject({ status: 'false_alarm', allClear: 'pending' });
    expect(await p.deliveries('all_clear')).toEqual([]);
    expect(w.events.filter((e) => e.name === 'incident.updated')).toEqual([]);

    const again = await timers.checkIn(p.caller, p.timerId);
    expect(again.incident?.status).toBe('false_alarm');
    expect((await p.deliveries('all_clear')).map((d) => d.phone).sort()).toEqual([...p.phones].sort());
    expect(w.events.filter((e) => e.name === 'incident.updated').map((e) => e.eventId)).toEqual([
      `incident.updated:${p.incidentId}:false_alarm`,
    ]);
    expect(await w.store.getIncident(p.incidentId)).toMatchObject({ allClear: 'done' });
    expect(await w.store.pendingAllClears(10)).toEqual([]);

    expect(await w.round()).toBe(2);
    for (const phone of p.phones) expect(w.carrier.to(phone)).toEqual(['sos', 'all_clear']);
  });

  it('nobody repeats the request: the next sweep completes the all-clear', async () => {
    const w = await world();
    const p = await w.sos(2);
    await w.round();
    const fault = failOnce(w.store);
    await expect(w.service(fault.store).checkIn(p.caller, p.timerId)).rejects.toThrow(/injected/);

    const report = await w.sweeper.sweep();
    expect(report.allClears).toBe(1);
    expect(await w.store.getIncident(p.incidentId)).toMatchObject({ status: 'false_alarm', allClear: 'done' });
    expect(await p.deliveries('all_clear')).toHaveLength(2);
    expect(w.events.some((e) => e.name === 'incident.updated' && e.eventId === `incident.updated:${p.incidentId}:false_alarm`)).toBe(true);
    expect((await w.sweeper.sweep()).allClears).toBeUndefined(); // done: not repaired again
    await w.round();
    for (const phone of p.phones) expect(w.carrier.to(phone)).toEqual(['sos', 'all_clear']);
  });
});

describe('invariant 5: after "I\'m safe" no SOS reaches a contact after the all-clear', () => {
  it('an SOS waiting in backoff after a refused attempt is superseded: the contact gets neither it nor an all-clear', async () => {
    const w = await world();
    const p = await w.sos(1);
    const phone = p.phones[0]!;
    w.carrier.script(phone, { retryable: true, code: 'http_503' });
    await w.round();
    expect(await p.byPhone(phone)).toMatchObject([{ kind: 'sos', status: 'pending', attempts: 1 }]);

    const r = await w.service(w.store).checkIn(p.caller, p.timerId);
    expect(r.incident?.status).toBe('false_alarm');
    expect(await p.byPhone(phone)).toMatchObject([{ kind: 'sos', status: 'superseded', attempts: 1 }]);
    expect(w.events.some((e) => e.name === 'delivery.updated' && (e.payload.delivery as { status: string }).status === 'superseded')).toBe(
      true,
    );

    w.advance(60_000); // long past the backoff
    expect(await w.round()).toBe(0);
    expect(w.carrier.to(phone)).toEqual(['sos']);
  });

  it('an SOS waiting in backoff after an attempt that timed out is not resent, and its contact gets the all-clear', async () => {
    const w = await world();
    const p = await w.sos(1);
    const phone = p.phones[0]!;
    w.carrier.script(phone, { retryable: true, code: 'timeout' });
    await w.round();
    expect(await p.byPhone(phone)).toMatchObject([{ status: 'pending', maybeAccepted: true }]);

    await w.service(w.store).checkIn(p.caller, p.timerId);
    expect(await p.deliveries('sos')).toMatchObject([{ status: 'superseded', maybeAccepted: true }]);
    expect(await w.round()).toBe(1);
    w.advance(60_000);
    expect(await w.round()).toBe(0);
    expect(w.carrier.to(phone)).toEqual(['sos', 'all_clear']);
    expect(await p.deliveries('all_clear')).toMatchObject([{ status: 'sent' }]);
  });

  it('an SOS being sent when "I\'m safe" arrives: the all-clear waits for its outcome, then goes after it', async () => {
    const w = await world();
    const p = await w.sos(1);
    const phone = p.phones[0]!;
    w.carrier.script(phone, 'hold');
    expect(await w.dispatcher.tick()).toBe(1);
    await eventually(async () => w.carrier.holding(phone), 'the SOS attempt in flight');

    await w.service(w.store).checkIn(p.caller, p.timerId);
    expect(await p.deliveries('all_clear')).toMatchObject([{ status: 'pending' }]);
    // the SOS outcome is unknown: the all-clear is not claimed, however often the dispatcher ticks
    for (let i = 0; i < 3; i++) expect(await w.dispatcher.tick()).toBe(0);

    w.carrier.release(phone, 'ok');
    await w.dispatcher.drain();
    expect(await p.deliveries('sos')).toMatchObject([{ status: 'sent' }]);
    expect(await w.round()).toBe(1);
    expect(w.carrier.to(phone)).toEqual(['sos', 'all_clear']);
    expect(await p.deliveries('all_clear')).toMatchObject([{ status: 'sent' }]);
  });

  it('an SOS being sent when "I\'m safe" arrives that the carrier refuses: it is not retried and the all-clear is not sent', async () => {
    const w = await world();
    const p = await w.sos(1);
    const phone = p.phones[0]!;
    w.carrier.script(phone, 'hold');
    await w.dispatcher.tick();
    await eventually(async () => w.carrier.holding(phone), 'the SOS attempt in flight');
    await w.service(w.store).checkIn(p.caller, p.timerId);

    w.carrier.release(phone, { retryable: true, code: 'http_503' });
    await w.dispatcher.drain();
    expect(await p.deliveries('sos')).toMatchObject([{ status: 'superseded', attempts: 1 }]);
    expect(await w.round()).toBe(1); // the all-clear is claimed and superseded, not sent
    expect(await p.deliveries('all_clear')).toMatchObject([{ status: 'superseded', attempts: 0, lastError: 'sos_not_sent' }]);
    w.advance(60_000);
    expect(await w.round()).toBe(0);
    expect(w.carrier.to(phone)).toEqual(['sos']);
  });

  it('an SOS whose dispatcher died mid-send (lapsed lease) is not resent after "I\'m safe", and its contact gets the all-clear after it', async () => {
    const w = await world();
    const p = await w.sos(1);
    const phone = p.phones[0]!;
    // a dispatcher leased it and vanished: whether the carrier got it is unknown
    expect(await w.store.claimDeliveries(10, 5_000)).toHaveLength(1);
    await w.service(w.store).checkIn(p.caller, p.timerId);
    expect(await p.deliveries('all_clear')).toMatchObject([{ status: 'pending' }]);
    expect(await w.round()).toBe(0); // the SOS is still sending: the all-clear waits

    w.advance(6_000); // the lease lapses
    expect(await w.round()).toBe(1); // the SOS is re-claimed and superseded, not sent
    expect(await p.deliveries('sos')).toMatchObject([{ status: 'superseded', maybeAccepted: true, attempts: 1 }]);
    expect(await w.round()).toBe(1);
    expect(w.carrier.to(phone)).toEqual(['all_clear']);
  });

  it('an SOS that was sent gets the all-clear; one that failed for good (invalid number) gets none', async () => {
    const w = await world();
    const p = await w.sos(2);
    const [good, invalid] = p.phones as [string, string];
    w.carrier.script(invalid, { retryable: false, code: 'twilio_21211' });
    await w.round();
    await w.service(w.store).checkIn(p.caller, p.timerId);
    expect((await p.deliveries('all_clear')).map((d) => d.phone)).toEqual([good]);
    await w.round();
    expect(w.carrier.to(good)).toEqual(['sos', 'all_clear']);
    expect(w.carrier.to(invalid)).toEqual(['sos']);
  });
});

describe('invariant 4: an escalation that keeps failing is dead-lettered, not retried every tick', () => {
  it('after ESCALATION_MAX_ATTEMPTS failures it is `failed`: no longer retried, listed, counted, logged', async () => {
    let opens = 0;
    const w = await world({
      // the group write fails too; the sweep then escalates the timer alone, through openIncident
      escalatorStore: (s) =>
        groupFails(
          withFault(s, 'openIncident', async () => {
            opens++;
            throw new Error('injected: incidents cannot be written');
          }),
        ),
    });
    const userId = 'dl-1';
    await w.store.replaceContacts(userId, [{ id: 'c1', name: 'A', phone: '+14155550100' }]);
    const { timer } = await w.service(w.store).arm({ userId }, { durationSeconds: 60 });
    w.advance(61_000);

    for (let i = 1; i <= 3; i++) {
      const r = await w.sweeper.sweep();
      expect(r.failed).toBe(1);
      // the third failure dead-letters it, and one more try opens the incident for moderators
      expect(opens).toBe(i === 3 ? 4 : i);
    }
    expect(await w.store.getTimer(timer.id)).toMatchObject({
      status: 'expired',
      escalation: 'failed',
      escalationAttempts: 3,
      escalationError: 'injected: incidents cannot be written',
    });
    for (let i = 0; i < 3; i++) expect((await w.sweeper.sweep()).failed).toBe(0);
    expect(opens).toBe(4);
    expect(w.lines.filter((l) => l.includes('the incident could not be opened either'))).toHaveLength(1);

    expect((await w.service(w.store).failedEscalations()).map((t) => t.id)).toEqual([timer.id]);
    const text = await w.metrics.registry.metrics();
    expect(text).toMatch(/^vigil_escalations_failed\{[^}]*\} 1$/m);
    expect(text).toMatch(/^vigil_escalations_dead_lettered_total\{[^}]*\} 1$/m);
    expect(w.lines.filter((l) => l.includes('escalation failed too many times: dead-lettered'))).toHaveLength(1);
  });

  it('a dead letter whose incident can still be opened reaches moderators: incident open, sos.triggered published', async () => {
    const w = await world({
      escalatorStore: (s) =>
        groupFails(
          withFault(s, 'addDeliveries', async () => {
            throw new Error('injected: deliveries cannot be written');
          }),
        ),
    });
    const userId = 'dl-2';
    await w.store.replaceContacts(userId, [{ id: 'c1', name: 'A', phone: '+14155550100' }]);
    const { timer } = await w.service(w.store).arm({ userId }, { durationSeconds: 60 });
    w.advance(61_000);
    for (let i = 0; i < 2; i++) await w.sweeper.sweep();
    expect(w.events.filter((e) => e.name === 'sos.triggered')).toEqual([]);

    await w.sweeper.sweep(); // the third failure dead-letters it
    expect(await w.store.getTimer(timer.id)).toMatchObject({ escalation: 'failed', escalationAttempts: 3 });
    const incident = await w.store.incidentForTimer(timer.id);
    expect(incident).toMatchObject({ status: 'active', userId });
    expect(w.events.filter((e) => e.name === 'sos.triggered').map((e) => ({ id: e.eventId, admins: e.toAdmins }))).toEqual([
      { id: `sos.triggered:${incident!.id}`, admins: true },
    ]);
    expect(w.lines.find((l) => l.includes('escalation failed too many times: dead-lettered'))).toContain(incident!.id);
  });

  it('moderators list dead-lettered escalations over the admin API and send them back to the sweep; people cannot', async () => {
    const v = await startTestVigil({}, { manualTicks: true });
    try {
      const tok = v.token('dl-api');
      const armed = await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 1 });
      expect(armed.status).toBe(201);
      const store = v.vigil.store;
      await eventually(async () => (await store.claimDueTimers(10, 1)).length === 1, 'the timer to fall due');
      await store.recordEscalationFailure(armed.body.timer.id as string, 'boom', 1);

      const r = await v.api(v.token('mod', { admin: true }), 'GET', '/v1/admin/escalations/failed');
      expect(r.status).toBe(200);
      expect(r.body.timers).toMatchObject([
        {
          id: armed.body.timer.id,
          userId: 'dl-api',
          status: 'expired',
          escalation: 'failed',
          escalationAttempts: 1,
          escalationError: 'boom',
        },
      ]);
      expect((await v.api(tok, 'GET', '/v1/admin/escalations/failed')).status).toBe(403);
      expect((await v.api(tok, 'POST', `/v1/admin/escalations/${armed.body.timer.id as string}/retry`)).status).toBe(403);

      // the moderator sends it back to the sweep, which escalates it
      const retried = await v.api(v.token('mod', { admin: true }), 'POST', `/v1/admin/escalations/${armed.body.timer.id as string}/retry`);
      expect(retried.status).toBe(200);
      expect(retried.body.timer).toMatchObject({ escalation: 'pending', escalationAttempts: 0 });
      expect((await v.vigil.sweeper.sweep()).repaired).toBe(1);
      expect(await store.getTimer(armed.body.timer.id as string)).toMatchObject({ escalation: 'done' });
      expect((await v.api(v.token('mod', { admin: true }), 'GET', '/v1/admin/escalations/failed')).body.timers).toEqual([]);
      expect((await v.api(v.token('mod', { admin: true }), 'POST', '/v1/admin/escalations/nope/retry')).status).toBe(404);
    } finally {
      await v.stop();
    }
  });
});
