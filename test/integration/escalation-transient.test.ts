/**
 * A sick store never dead-letters an SOS: an escalation that fails because the store is
 * unavailable (busy, unreachable, out of time, a write it did not confirm) is not counted
 * toward ESCALATION_MAX_ATTEMPTS; it waits a backoff and is tried again until the store
 * recovers, then escalates once and its contacts are texted. Other failures still count.
 *
 * SQLite: the escalation writes fail with the adapter's own mapping of SQLITE_BUSY
 * (store/sqlite/errors.ts) for a while, through a store wrapped around the real one.
 * MongoDB (FerretDB): the real adapter behind a wire proxy that answers the incident insert
 * with an unconfirmed write concern or `MaxTimeMSExpired`, as a primary under strain would.
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import mongoose from 'mongoose';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { MongoStore } from '../../src/store/mongo/mongo-store.js';
import type { Store } from '../../src/store/port.js';
import { unavailableOr } from '../../src/store/sqlite/errors.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { FERRET_MISSING, ferretAvailable, startFerretDb } from '../helpers/ferretdb.js';
import { RecordingCarrier } from '../helpers/recording-carrier.js';
import { tempSqliteStore } from '../helpers/sqlite-store.js';
import { armDue } from '../helpers/sweep-suite.js';
import { startFaultProxy, type FaultAction } from '../helpers/wire-faults.js';
import { testWorkers } from '../helpers/workers.js';

const MAX_ATTEMPTS = 3;
/** more transient failures in a row than ESCALATION_MAX_ATTEMPTS allows counted ones */
const SICK_SWEEPS = 2 * MAX_ATTEMPTS + 1;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function sqlite(): Promise<SqliteStore> {
  const { store, cleanup } = await tempSqliteStore();
  cleanups.push(cleanup);
  return store;
}

/** SQLite busy past its timeout, as the adapter reports it (503 store_busy). */
const busy = (op: string) => unavailableOr(op, new Database.SqliteError('database is locked', 'SQLITE_BUSY'));

/** `store` whose escalation writes (the group commit and the single-timer path) throw `fault()` while it answers an error. */
function failingEscalations(store: Store, fault: (op: string) => unknown | undefined): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      const fn = (v as (...a: unknown[]) => Promise<unknown>).bind(target);
      if (prop !== 'escalateBatch' && prop !== 'openIncident') return fn;
      return async (...args: unknown[]) => {
        const err = fault(prop);
        if (err !== undefined) throw err;
        return fn(...args);
      };
    },
  });
}

function workers(store: Store, escalatorStore: Store, transientRetry = { baseMs: 0, capMs: 0 }) {
  const metrics = createMetrics({ replica: 't', collectDefault: false });
  const carrier = new RecordingCarrier();
  const w = testWorkers(store, {
    metrics,
    carrier,
    sweep: { maxEscalationAttempts: MAX_ATTEMPTS, transientRetry },
    overrides: { escalatorStore },
  });
  return { ...w, metrics, carrier };
}

async function counter(metrics: Metrics, name: string, labels = ''): Promise<number> {
  const text = await metrics.registry.metrics();
  const m = new RegExp(`^${name}\\{${labels}[^}]*\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

/** One due timer whose person has one contact; its id and the contact's phone. */
async function dueWithContact(store: Store): Promise<{ id: string; phone: string }> {
  const [id] = await armDue(store, 1);
  const phone = '+14155550123';
  const timer = await store.getTimer(id as string);
  await store.replaceContacts(timer!.userId, [{ id: 'c1', name: 'A', phone }]);
  return { id: id as string, phone };
}

/**
 * The store is sick for SICK_SWEEPS sweeps (each fails the escalation with a transient error),
 * then recovers: the timer was never counted nor dead-lettered, and escalates once, texts included.
 */
async function sickThenRecovered(store: Store, w: ReturnType<typeof workers>, timer: { id: string; phone: string }, faults: () => number) {
  for (let i = 1; i <= SICK_SWEEPS; i++) {
    const r = await w.sweeper.sweep();
    expect(r, `sweep ${i}`).toMatchObject({ outcome: 'swept', escalated: 0, failed: 1, transient: 1 });
    expect(await store.getTimer(timer.id), `sweep ${i}`).toMatchObject({ status: 'expired', escalation: 'pending' });
    expect((await store.getTimer(timer.id))?.escalationAttempts ?? 0).toBe(0);
  }
  expect(faults()).toBe(SICK_SWEEPS);
  expect(await store.failedEscalations(10)).toEqual([]);
  expect(await store.incidentForTimer(timer.id)).toBeNull();

  // recovered
  const r = await w.sweeper.sweep();
  expect(r).toMatchObject({ outcome: 'swept', escalated: 1, failed: 0 });
  expect(r.transient).toBeUndefined();
  expect(await store.getTimer(timer.id)).toMatchObject({ escalation: 'done' });
  const incident = await store.incidentForTimer(timer.id);
  expect(incident).toMatchObject({ status: 'active' });
  expect(await w.dispatcher.tick()).toBe(1);
  await w.dispatcher.drain();
  expect(w.carrier.sent.map((s) => s.to)).toEqual([timer.phone]);
  // nothing more to do: one incident, one text
  expect(await w.sweeper.sweep()).toMatchObject({ repaired: 0, escalated: 0, failed: 0 });
  expect(await w.dispatcher.tick()).toBe(0);
  expect(await store.deliveriesFor([incident!.id])).toHaveLength(1);

  expect(await counter(w.metrics, 'vigil_escalation_errors_total', 'kind="transient"')).toBe(SICK_SWEEPS);
  expect(await counter(w.metrics, 'vigil_escalation_errors_total', 'kind="counted"')).toBe(0);
  expect(await counter(w.metrics, 'vigil_escalations_dead_lettered_total')).toBe(0);
}

describe('escalation: a sick store never dead-letters an SOS (SQLite)', () => {
  it(`store_busy on ${SICK_SWEEPS} sweeps in a row (ESCALATION_MAX_ATTEMPTS ${MAX_ATTEMPTS}), then the store recovers: escalated once, texted, never dead-lettered`, async () => {
    const store = await sqlite();
    let faults = 0;
    const escalatorStore = failingEscalations(store, (op) => (faults < SICK_SWEEPS ? (faults++, busy(op)) : undefined));
    const w = workers(store, escalatorStore);
    await sickThenRecovered(store, w, await dueWithContact(store), () => faults);
  });

  it('a transient failure waits its backoff: the next sweeps do not ask the store again for that timer, and nothing is counted', async () => {
    const store = await sqlite();
    let calls = 0;
    const escalatorStore = failingEscalations(store, (op) => (calls++, busy(op)));
    const w = workers(store, escalatorStore, { baseMs: 600_000, capMs: 600_000 });
    const timer = await dueWithContact(store);
    expect(await w.sweeper.sweep()).toMatchObject({ claimed: 1, failed: 1, transient: 1 });
    expect(calls).toBe(1); // the group failed transiently: not retried one timer at a time
    for (let i = 0; i < 3; i++) expect(await w.sweeper.sweep()).toMatchObject({ repaired: 0, failed: 0, waiting: 1 });
    expect(calls).toBe(1);
    expect(await store.getTimer(timer.id)).toMatchObject({ escalation: 'pending' });
    expect((await store.getTimer(timer.id))?.escalationAttempts ?? 0).toBe(0);
  });

  it('only failures that are not transient count: transient ones in between neither count nor reset the count', async () => {
    const store = await sqlite();
    // sweep by sweep: the group write fails, then the single-timer one (counted) or only the group (transient)
    const plan: ('transient' | 'bug')[] = ['bug', 'transient', 'transient', 'bug', 'transient', 'bug'];
    let step = 0;
    const escalatorStore = failingEscalations(store, (op) => {
      const kind = plan[step];
      if (kind === undefined) return undefined;
      if (kind === 'transient') return (step++, busy(op));
      if (op === 'openIncident') step++;
      return new Error('injected: a bug');
    });
    const w = workers(store, escalatorStore);
    const timer = await dueWithContact(store);
    const attempts = async () => (await store.getTimer(timer.id))?.escalationAttempts ?? 0;
    const seen: number[] = [];
    for (let i = 0; i < plan.length; i++) {
      await w.sweeper.sweep();
      seen.push(await attempts());
    }
    expect(seen).toEqual([1, 1, 1, 2, 2, 3]);
    expect(await store.getTimer(timer.id)).toMatchObject({ escalation: 'failed' });
    expect(await counter(w.metrics, 'vigil_escalation_errors_total', 'kind="counted"')).toBe(3);
    expect(await counter(w.metrics, 'vigil_escalation_errors_total', 'kind="transient"')).toBe(3);
  });
});

const ferret = ferretAvailable() ? await startFerretDb() : undefined;
const proxy = ferret ? await startFaultProxy(ferret.uri) : undefined;
const admin = ferret ? await mongoose.createConnection(ferret.uri, { serverSelectionTimeoutMS: 5000 }).asPromise() : undefined;
afterAll(async () => {
  await admin?.close();
  await proxy?.stop();
  await ferret?.stop();
});

const incidentInsert = (c: Record<string, unknown>) => c.insert === 'incidents';
const UNCONFIRMED_NOT_APPLIED: FaultAction = { kind: 'unconfirmed-not-applied' };
const TIME_LIMIT: FaultAction = {
  kind: 'error',
  error: { code: 50, codeName: 'MaxTimeMSExpired', errmsg: 'operation exceeded time limit' },
};
const STEPPED_DOWN: FaultAction = { kind: 'error', error: { code: 189, codeName: 'PrimarySteppedDown', errmsg: 'primary stepped down' } };

describe.skipIf(!proxy)(
  proxy ? 'escalation: a sick store never dead-letters an SOS (MongoDB adapter)' : `escalation on MongoDB [${FERRET_MISSING}]`,
  () => {
    it(`unconfirmed writes, time limits and a stepped-down primary on ${SICK_SWEEPS} sweeps in a row, then the store recovers: escalated once, texted, never dead-lettered`, async () => {
      if (!proxy || !admin) throw new Error('no server');
      const dbName = `vigil_transient_${randomUUID().replace(/-/g, '')}`;
      const store = await MongoStore.connect({ uri: proxy.uri, dbName, serverSelectionTimeoutMs: 5000 });
      cleanups.push(async () => {
        await store.close();
        await admin.useDb(dbName, { useCache: false }).dropDatabase();
      });
      const w = workers(store, store);
      const timer = await dueWithContact(store);
      const actions = [UNCONFIRMED_NOT_APPLIED, TIME_LIMIT, STEPPED_DOWN];
      for (let i = 0; i < SICK_SWEEPS; i++) proxy.inject({ match: incidentInsert, action: actions[i % actions.length] as FaultAction });
      await sickThenRecovered(store, w, timer, () => SICK_SWEEPS - proxy.pending());
      expect(proxy.pending()).toBe(0);
    });
  },
);
