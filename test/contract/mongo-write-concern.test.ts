/**
 * Unconfirmed writes on the MongoDB store. A single FerretDB has no replication, so the
 * faults are injected on the wire (test/helpers/wire-faults.ts): the driver receives the
 * reply a primary sends when `w: majority` times out (`writeConcernError`, code 64,
 * wtimeout) and raises its own MongoWriteConcernError; everything above it is the real
 * adapter. For every tagged write, each branch of the outcome decision:
 * - applied but unconfirmed → the majority re-read finds the write's tag → success;
 * - not applied, unconfirmed → the re-read does not find it → 503 store_write_unconfirmed;
 * - unconfirmed and the re-read fails too → 503 store_write_unconfirmed;
 * - the connection drops after the server applied the write → 503 store_unavailable, and a
 *   retry sees the write (the port's operations are safe to retry).
 */
import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MongoStore } from '../../src/store/mongo/mongo-store.js';
import { FERRET_MISSING, ferretAvailable, startFerretDb } from '../helpers/ferretdb.js';
import { startFaultProxy, WTIMEOUT, type FaultAction } from '../helpers/wire-faults.js';
import { arm, armDue, newDeliveries, newTimer, openedIncident } from './store-contract-helpers.js';

type Doc = Record<string, unknown>;

const ferret = ferretAvailable() ? await startFerretDb() : undefined;
const proxy = ferret ? await startFaultProxy(ferret.uri) : undefined;
const admin = ferret ? await mongoose.createConnection(ferret.uri, { serverSelectionTimeoutMS: 5000 }).asPromise() : undefined;

afterAll(async () => {
  await admin?.close();
  await proxy?.stop();
  await ferret?.stop();
});

const CAPS = { maxExtensions: 10, maxTotalSeconds: 86_400 };

/** A write command on `collection` (`findAndModify`, `insert`, `update`). */
const command = (name: string, collection: string) => (c: Doc) => c[name] === collection;
/** The re-read after an unconfirmed write: a `find` with readConcern majority. */
const majorityFind =
  (collection: string, also: (c: Doc) => boolean = () => true) =>
  (c: Doc) =>
    c.find === collection && (c.readConcern as Doc | undefined)?.level === 'majority' && also(c);
const claimReadBack = (c: Doc) => JSON.stringify(c.filter).includes('claimToken');

interface TaggedWrite {
  name: string;
  write: (c: Doc) => boolean;
  reread: (c: Doc) => boolean;
  /** set the scene; `run` is the write under test, `applied` reads whether it took effect */
  prepare(
    store: MongoStore,
  ): Promise<{ run: () => Promise<unknown>; applied: () => Promise<boolean>; check?: (result: unknown) => Promise<void> }>;
  /** batched claims answer with what a majority has seen instead of failing */
  notAppliedAnswersEmpty?: boolean;
}

const WRITES: TaggedWrite[] = [
  {
    name: 'armTimer (insert, re-read by id)',
    write: command('insert', 'timers'),
    reread: majorityFind('timers'),
    async prepare(store) {
      const t = await newTimer(store);
      return {
        run: () => store.armTimer(t),
        applied: async () => (await store.getTimer(t.id)) !== null,
        check: async (r) => expect(r).toEqual({ kind: 'created', timer: await store.getTimer(t.id) }),
      };
    },
  },
  {
    name: 'extendTimer (findAndModify)',
    write: command('findAndModify', 'timers'),
    reread: majorityFind('timers'),
    async prepare(store) {
      const t = await arm(store);
      return {
        run: () => store.extendTimer(t.id, t.userId, 60, CAPS),
        applied: async () => (await store.getTimer(t.id))?.extensions === 1,
        check: async (r) => expect(r).toEqual(await store.getTimer(t.id)),
      };
    },
  },
  {
    name: 'resolveTimer (findAndModify)',
    write: command('findAndModify', 'timers'),
    reread: majorityFind('timers'),
    async prepare(store) {
      const t = await arm(store);
      return {
        run: () => store.resolveTimer(t.id, t.userId, 'safe'),
        applied: async () => (await store.getTimer(t.id))?.status === 'safe',
        check: async (r) => expect(r).toEqual(await store.getTimer(t.id)),
      };
    },
  },
  {
    name: 'markEscalated (findAndModify)',
    write: command('findAndModify', 'timers'),
    reread: majorityFind('timers'),
    async prepare(store) {
      const t = await armDue(store);
      await store.claimDueTimers(10, 1);
      return {
        run: () => store.markEscalated(t.id, 'inc-1'),
        applied: async () => (await store.getTimer(t.id))?.escalation === 'done',
        check: async (r) => expect(r).toBe(true),
      };
    },
  },
  {
    name: 'claimDueTimers (updateMany, read back by claim token)',
    write: command('update', 'timers'),
    reread: majorityFind('timers', claimReadBack),
    notAppliedAnswersEmpty: true,
    async prepare(store) {
      const t = await armDue(store);
      return {
        run: () => store.claimDueTimers(10, 3),
        applied: async () => (await store.getTimer(t.id))?.status === 'expired',
        check: async (r) => expect(r).toEqual([await store.getTimer(t.id)]),
      };
    },
  },
  {
    name: 'openIncident (insert, re-read by timer)',
    write: command('insert', 'incidents'),
    reread: majorityFind('incidents'),
    async prepare(store) {
      const t = await armDue(store);
      const [timer] = await store.claimDueTimers(10, 1);
      if (!timer) throw new Error('not claimed');
      const id = randomUUID();
      return {
        run: () => store.openIncident(timer, 1, id),
        applied: async () => (await store.incidentForTimer(t.id))?.id === id,
        check: async (r) => expect(r).toEqual({ incident: await store.getIncident(id), created: true }),
      };
    },
  },
  {
    name: 'transitionIncident (findAndModify)',
    write: command('findAndModify', 'incidents'),
    reread: majorityFind('incidents'),
    async prepare(store) {
      const { incident } = await openedIncident(store);
      return {
        run: () => store.transitionIncident(incident.id, ['active'], 'acknowledged', 'mod'),
        applied: async () => (await store.getIncident(incident.id))?.status === 'acknowledged',
        check: async (r) => expect(r).toEqual(await store.getIncident(incident.id)),
      };
    },
  },
  {
    name: 'addDeliveries (unordered insertMany, re-read by incident)',
    write: command('insert', 'deliveries'),
    reread: majorityFind('deliveries'),
    async prepare(store) {
      const { incident } = await openedIncident(store);
      const list = newDeliveries(incident.id, 2);
      return {
        run: () => store.addDeliveries(incident, list),
        applied: async () => (await store.deliveriesFor([incident.id])).length === 2,
        check: async (r) => expect(r).toEqual(await store.deliveriesFor([incident.id])),
      };
    },
  },
  {
    name: 'claimDeliveries (updateMany, read back by claim token)',
    write: command('update', 'deliveries'),
    reread: majorityFind('deliveries', claimReadBack),
    notAppliedAnswersEmpty: true,
    async prepare(store) {
      const { incident } = await openedIncident(store);
      const [d] = await store.addDeliveries(incident, newDeliveries(incident.id, 1));
      if (!d) throw new Error('no delivery');
      return {
        run: () => store.claimDeliveries(10, 60_000),
        applied: async () => (await store.getDelivery(d.key))?.status === 'sending',
        check: async (r) => expect(r).toEqual([await store.getDelivery(d.key)]),
      };
    },
  },
  {
    name: 'recordAttempt (findAndModify)',
    write: command('findAndModify', 'deliveries'),
    reread: majorityFind('deliveries'),
    async prepare(store) {
      const d = await leasedDelivery(store);
      return {
        run: () => store.recordAttempt(d.key, d.attempts, { status: 'sent', carrier: 'twilio', providerMessageId: `SM${d.key}` }),
        applied: async () => (await store.getDelivery(d.key))?.status === 'sent',
        check: async (r) => expect(r).toEqual(await store.getDelivery(d.key)),
      };
    },
  },
  {
    name: 'applyReceipt (findAndModify, re-read by message id and tag)',
    write: command('findAndModify', 'deliveries'),
    reread: majorityFind('deliveries'),
    async prepare(store) {
      const d = await leasedDelivery(store);
      const sid = `SM${randomUUID()}`;
      await store.recordAttempt(d.key, d.attempts, { status: 'sent', carrier: 'twilio', providerMessageId: sid });
      return {
        run: () => store.applyReceipt(sid, 'delivered', ['sent']),
        applied: async () => (await store.getDelivery(d.key))?.status === 'delivered',
        check: async (r) => expect(r).toEqual({ result: 'applied', delivery: await store.getDelivery(d.key) }),
      };
    },
  },
  {
    name: 'replaceContacts (upserting findAndModify)',
    write: command('findAndModify', 'contacts'),
    reread: majorityFind('contacts'),
    async prepare(store) {
      const userId = randomUUID();
      const contacts = [{ id: 'c_1', name: 'Bea', phone: '+14155550100' }];
      return {
        run: () => store.replaceContacts(userId, contacts),
        applied: async () => (await store.getContacts(userId)).length === 1,
        check: async (r) => expect(r).toEqual(contacts.map((c) => ({ ...c, state: 'pending' }))),
      };
    },
  },
  {
    name: 'recordEscalationFailure (findAndModify)',
    write: command('findAndModify', 'timers'),
    reread: majorityFind('timers'),
    async prepare(store) {
      const t = await armDue(store);
      await store.claimDueTimers(10, 1);
      return {
        run: () => store.recordEscalationFailure(t.id, 'carrier down', 5),
        applied: async () => (await store.getTimer(t.id))?.escalationAttempts === 1,
        check: async (r) => expect(r).toEqual(await store.getTimer(t.id)),
      };
    },
  },
  {
    name: 'retryEscalation (findAndModify)',
    write: command('findAndModify', 'timers'),
    reread: majorityFind('timers'),
    async prepare(store) {
      const t = await armDue(store);
      await store.claimDueTimers(10, 1);
      await store.recordEscalationFailure(t.id, 'carrier down', 1);
      return {
        run: () => store.retryEscalation(t.id, 'mod-ann'),
        applied: async () => (await store.getTimer(t.id))?.escalation === 'pending',
        check: async (r) => expect(r).toEqual(await store.getTimer(t.id)),
      };
    },
  },
  {
    name: 'supersedePendingSos (updateMany, read back by tag)',
    write: command('update', 'deliveries'),
    reread: majorityFind('deliveries', (c) => JSON.stringify(c.filter).includes('lastOp')),
    notAppliedAnswersEmpty: true,
    async prepare(store) {
      const { incident } = await openedIncident(store);
      const [d] = await store.addDeliveries(incident, newDeliveries(incident.id, 1));
      if (!d) throw new Error('no delivery');
      return {
        run: () => store.supersedePendingSos(incident.id),
        applied: async () => (await store.getDelivery(d.key))?.status === 'superseded',
        check: async (r) => expect(r).toEqual([await store.getDelivery(d.key)]),
      };
    },
  },
  {
    name: 'supersedeClaimed (findAndModify)',
    write: command('findAndModify', 'deliveries'),
    reread: majorityFind('deliveries'),
    async prepare(store) {
      const d = await leasedDelivery(store);
      return {
        run: () => store.supersedeClaimed(d.key, d.attempts, 'all clear'),
        applied: async () => (await store.getDelivery(d.key))?.status === 'superseded',
        check: async (r) => expect(r).toEqual(await store.getDelivery(d.key)),
      };
    },
  },
];

/** One delivery of a fresh incident, claimed (status `sending`) by this test. */
async function leasedDelivery(store: MongoStore) {
  const { incident } = await openedIncident(store);
  await store.addDeliveries(incident, newDeliveries(incident.id, 1));
  const [d] = await store.claimDeliveries(10, 60_000);
  if (!d) throw new Error('nothing leased');
  return d;
}

const UNCONFIRMED = { kind: 'unavailable', code: 'store_write_unconfirmed' };
const REREAD_TIMED_OUT: FaultAction = {
  kind: 'error',
  error: { code: 50, codeName: 'MaxTimeMSExpired', errmsg: 'operation exceeded time limit' },
};

describe.skipIf(!proxy)(
  proxy
    ? 'mongo store: unconfirmed writes (write concern errors injected on the wire)'
    : `mongo store: unconfirmed writes [${FERRET_MISSING}]`,
  () => {
    let store: MongoStore | undefined;
    let dbName = '';
    const open = () => {
      if (!store) throw new Error('no store');
      return store;
    };

    beforeEach(async () => {
      if (!proxy) return;
      dbName = `vigil_wc_${randomUUID().replace(/-/g, '')}`;
      store = await MongoStore.connect({ uri: proxy.uri, dbName, serverSelectionTimeoutMs: 5000 });
    });

    afterEach(async () => {
      // a fault left armed means the write under test never sent the command it names
      expect(proxy?.pending()).toBe(0);
      await store?.close();
      await admin?.useDb(dbName, { useCache: false }).dropDatabase();
    });

    for (const w of WRITES) {
      describe(w.name, () => {
        it('applied but unconfirmed: the majority re-read finds the write’s tag → success with the document', async () => {
          const s = open();
          const { run, applied, check } = await w.prepare(s);
          proxy?.inject({ match: w.write, action: { kind: 'unconfirmed' } });
          const result = await run();
          expect(await applied()).toBe(true);
          await check?.(result);
        });

        it(
          w.notAppliedAnswersEmpty
            ? 'not applied and unconfirmed: only what a majority has seen is answered (nothing), no error'
            : 'not applied and unconfirmed: the re-read does not find the tag → 503 store_write_unconfirmed, nothing changed',
          async () => {
            const s = open();
            const { run, applied } = await w.prepare(s);
            proxy?.inject({ match: w.write, action: { kind: 'unconfirmed-not-applied' } });
            if (w.notAppliedAnswersEmpty) expect(await run()).toEqual([]);
            else await expect(run()).rejects.toMatchObject(UNCONFIRMED);
            expect(await applied()).toBe(false);
          },
        );

        it('unconfirmed and the majority re-read fails too → 503 store_write_unconfirmed', async () => {
          const s = open();
          const { run } = await w.prepare(s);
          proxy?.inject({ match: w.write, action: { kind: 'unconfirmed' } });
          proxy?.inject({ match: w.reread, action: REREAD_TIMED_OUT });
          await expect(run()).rejects.toMatchObject(UNCONFIRMED);
        });

        it('connection lost after the server applied the write (outcome unknown) → 503 store_unavailable; the write is there', async () => {
          const s = open();
          const { run, applied } = await w.prepare(s);
          proxy?.inject({ match: w.write, action: { kind: 'hangup' } });
          await expect(run()).rejects.toMatchObject({ kind: 'unavailable', code: 'store_unavailable' });
          expect(await applied()).toBe(true);
        });
      });
    }

    it('a write refused outright with code 64 (no writeConcernError document) is unconfirmed too → 503 store_write_unconfirmed', async () => {
      const s = open();
      const t = await arm(s);
      proxy?.inject({ match: command('findAndModify', 'timers'), action: { kind: 'error', error: WTIMEOUT } });
      await expect(s.resolveTimer(t.id, t.userId, 'safe')).rejects.toMatchObject(UNCONFIRMED);
      expect((await s.getTimer(t.id))?.status).toBe('active');
    });

    it('a command refused for a passing reason (time limit, primary stepping down) → 503 store_busy', async () => {
      const s = open();
      const t = await arm(s);
      for (const error of [
        { code: 50, codeName: 'MaxTimeMSExpired', errmsg: 'operation exceeded time limit' },
        { code: 189, codeName: 'PrimarySteppedDown', errmsg: 'primary stepped down' },
        { code: 10107, codeName: 'NotWritablePrimary', errmsg: 'not primary' },
      ]) {
        proxy?.inject({ match: command('findAndModify', 'timers'), action: { kind: 'error', error } });
        await expect(s.resolveTimer(t.id, t.userId, 'safe'), error.codeName).rejects.toMatchObject({
          kind: 'unavailable',
          code: 'store_busy',
        });
      }
      expect((await s.getTimer(t.id))?.status).toBe('active');
    });

    describe('duplicate keys still map as before', () => {
      it('a second live timer → live_timer_exists; a second incident for a timer → the existing one, created false', async () => {
        const s = open();
        const first = await arm(s);
        expect(await s.armTimer(await newTimer(s, { userId: first.userId }))).toEqual({ kind: 'live_timer_exists', timer: first });
        const { timer, incident } = await openedIncident(s);
        expect(await s.openIncident(timer, 2, randomUUID())).toEqual({ incident, created: false });
      });

      it('a second live timer whose write concern is unconfirmed → live_timer_exists (a refused insert did not happen)', async () => {
        const s = open();
        const first = await arm(s);
        proxy?.inject({ match: command('insert', 'timers'), action: { kind: 'unconfirmed' } });
        expect(await s.armTimer(await newTimer(s, { userId: first.userId }))).toEqual({ kind: 'live_timer_exists', timer: first });
      });

      it('deliveries partly there already, write concern unconfirmed → all of them once the majority re-read has every key', async () => {
        const s = open();
        const { incident } = await openedIncident(s);
        const list = newDeliveries(incident.id, 3);
        await s.addDeliveries(incident, list.slice(0, 2));
        proxy?.inject({ match: command('insert', 'deliveries'), action: { kind: 'unconfirmed' } });
        const all = await s.addDeliveries(incident, list);
        expect(all.map((d) => d.key).sort()).toEqual(list.map((d) => d.key).sort());
      });

      it('a duplicate incident whose write concern is unconfirmed → the existing one (the re-read by timer finds it), created false', async () => {
        const s = open();
        const { timer, incident } = await openedIncident(s);
        proxy?.inject({ match: command('insert', 'incidents'), action: { kind: 'unconfirmed' } });
        expect(await s.openIncident(timer, 2, randomUUID())).toEqual({ incident, created: false });
      });
    });
  },
);
