/**
 * The store contract on the MongoDB store. With MONGODB_URI set (a real MongoDB replica
 * set) every case runs, races included. Without it, a throwaway FerretDB v1 is started
 * for this file; what the server is comes from its buildInfo (store.serverKind()), never
 * from configuration, and decides which cases skip. Each test uses a fresh database.
 */
import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { afterAll, describe, expect, it } from 'vitest';
import { EARLY_RECEIPT_KEEP_MS, receiptFrom } from '../../src/domain/delivery.js';
import { DomainError } from '../../src/domain/errors.js';
import { ServerClock } from '../../src/store/mongo/clock.js';
import { makeModels } from '../../src/store/mongo/schemas.js';
import { transitionIncident } from '../../src/store/mongo/incidents.js';
import { extendTimer, extendTimerKeyed, retryEscalation } from '../../src/store/mongo/timers.js';
import { FERRETDB_UPDATES_PER_COMMAND, type Ctx } from '../../src/store/mongo/writes.js';
import { MongoStore, type CommandInfo, type MongoStoreOptions, type ServerKind } from '../../src/store/mongo/mongo-store.js';
import { FERRET_MISSING, ferretAvailable, startFerretDb, type FerretDb } from '../helpers/ferretdb.js';
import { freePort } from '../helpers/net.js';
import { inProcessPeer } from './race-steps.js';
import { storeContract, type ContractOptions } from './store-contract.js';
import { arm, armDue, at, newDeliveries, openedIncident, untilAfter } from './store-contract-helpers.js';

const realUri = process.env.MONGODB_URI;
const runnable = Boolean(realUri) || ferretAvailable();
const ferret: FerretDb | undefined = !realUri && runnable ? await startFerretDb() : undefined;
const uri = realUri ?? ferret?.uri;
// one connection of the test file's own, to drop each test's database
const admin = uri ? await mongoose.createConnection(uri, { serverSelectionTimeoutMS: 5000 }).asPromise() : undefined;

afterAll(async () => {
  await admin?.close();
  await ferret?.stop();
});

/**
 * Until both of the store's clocks are past `t`: its estimate (`now()`, the server's time
 * read at the last sync, advanced locally) and the server's own, which stamps updatedAt
 * as it applies a write ($currentDate). The estimate can run ahead of the server by up to
 * half a round trip of its last sync, so a case that reads `now()` past `t` and then
 * writes could otherwise get an updatedAt at or before `t`.
 */
async function untilServerAfter(store: MongoStore, t: Date, maxWaitMs = 10_000): Promise<void> {
  const db = admin?.db;
  if (!db) throw new Error('no server');
  await untilAfter(store, t, maxWaitMs);
  const giveUp = Date.now() + maxWaitMs;
  for (;;) {
    const hello: { localTime?: unknown } = await db.admin().command({ hello: 1 });
    if (!(hello.localTime instanceof Date)) throw new Error('hello did not report localTime');
    if (hello.localTime.getTime() > t.getTime()) return;
    if (Date.now() > giveUp) throw new Error(`server clock did not pass ${t.toISOString()} within ${maxWaitMs}ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function fresh(extra: Partial<MongoStoreOptions> = {}) {
  if (!uri || !admin) throw new Error('no server');
  const dbName = `vigil_test_${randomUUID().replace(/-/g, '')}`;
  const open = () => MongoStore.connect({ uri, dbName, serverSelectionTimeoutMs: 5000, ...extra });
  const store = await open();
  return {
    store,
    dbName,
    peer: async () => inProcessPeer(await open()),
    passTime: (t: Date) => untilServerAfter(store, t),
    cleanup: async () => {
      await store.close();
      await admin.useDb(dbName, { useCache: false }).dropDatabase();
    },
  };
}

async function detect(): Promise<ServerKind | undefined> {
  if (!uri) return undefined;
  const { store, cleanup } = await fresh();
  try {
    return await store.serverKind();
  } finally {
    await cleanup();
  }
}
const kind = await detect();

/** the store's clock is the server's: a case that needs a day to pass cannot wait for it */
const skip = { 'receipts › an early receipt is kept for EARLY_RECEIPT_KEEP_MS at most': 'the server clock cannot be moved a day ahead' };
const opts: ContractOptions =
  kind === 'ferretdb'
    ? {
        racesUnsupported:
          'FerretDB v1 executes findAndModify as a read followed by a write, so it cannot prove atomic compare-and-swap; needs a real MongoDB: set MONGODB_URI to run it',
        skip,
      }
    : { skip };

if (kind) {
  storeContract(kind, fresh, opts);
} else {
  describe.skip(`store contract: mongodb [${FERRET_MISSING}, and MONGODB_URI is not set]`, () => {
    it('needs a server', () => undefined);
  });
}

describe.skipIf(!kind)(`mongo store on ${kind ?? 'no server'}`, () => {
  it('serverKind comes from buildInfo', async () => {
    const { store, cleanup } = await fresh();
    try {
      expect(await store.serverKind()).toBe(realUri ? kind : 'ferretdb');
    } finally {
      await cleanup();
    }
  });

  it('round trips per claimed batch are constant: the same for 10 and 500 timers', async () => {
    // a long clock refresh keeps the clock's `hello` out of the measured batches
    let roundTrips = 0;
    const { store, cleanup } = await fresh({ clockRefreshMs: 600_000, onCommand: () => void roundTrips++ });
    try {
      const due = Array.from({ length: 510 }, () => randomUUID());
      for (let i = 0; i < due.length; i += 50) await Promise.all(due.slice(i, i + 50).map((userId) => armDue(store, userId)));
      await store.now();
      const trips: Record<number, number> = {};
      for (const size of [10, 500]) {
        const before = roundTrips;
        const claimed = await store.claimDueTimers(size, 1);
        trips[size] = roundTrips - before;
        expect(claimed).toHaveLength(size);
        console.log(`[${kind}] claimDueTimers: ${claimed.length} timers claimed in ${trips[size]} round trips`);
      }
      expect(trips[10]).toBe(3);
      expect(trips[500]).toBe(3);
      const before = roundTrips;
      expect(await store.claimDueTimers(500, 1)).toEqual([]);
      expect(roundTrips - before).toBe(1);

      const { incident } = await openedIncident(store);
      await store.addDeliveries(incident, newDeliveries(incident.id, 510));
      for (const size of [10, 500]) {
        const start = roundTrips;
        const leased = await store.claimDeliveries(size, 60_000);
        const n = roundTrips - start;
        expect(leased).toHaveLength(size);
        expect(n).toBe(3);
        console.log(`[${kind}] claimDeliveries: ${leased.length} deliveries leased in ${n} round trips`);
      }
    } finally {
      await cleanup();
    }
  }, 120_000);

  it('150 send outcomes recorded in one call all land, and the server still answers (FerretDB v1 wedges on an update command of ~100 statements)', async () => {
    let updates = 0;
    const { store, cleanup } = await fresh({ onCommand: (c) => void (c.name === 'update' && updates++) });
    try {
      const { incident } = await openedIncident(store);
      await store.addDeliveries(incident, newDeliveries(incident.id, 150));
      const leased = await store.claimDeliveries(150, 60_000);
      expect(leased).toHaveLength(150);
      updates = 0;
      const recorded = await store.recordAttempts(
        leased.map((d, i) => ({
          key: d.key,
          attempt: d.attempts,
          outcome: { status: 'sent' as const, carrier: 'twilio' as const, providerMessageId: `SM${i}` },
        })),
      );
      expect(recorded.filter((d) => d?.status === 'sent')).toHaveLength(150);
      // one command on MongoDB; commands of FERRETDB_UPDATES_PER_COMMAND statements on FerretDB
      expect(updates).toBe(kind === 'ferretdb' ? Math.ceil(150 / FERRETDB_UPDATES_PER_COMMAND) : 1);
      expect(await store.ping()).toBe(true);
      expect(await store.claimDeliveries(10, 60_000)).toEqual([]);
    } finally {
      await cleanup();
    }
  }, 60_000);

  it('invariant 4 with sweep shards: a timer stored before slots existed (no slot field) is swept by shard 0 and by no other', async () => {
    const { store, dbName, cleanup } = await fresh();
    try {
      const legacy = await armDue(store);
      // as stored by a version without sweep slots
      await admin!
        .useDb(dbName, { useCache: false })
        .collection('timers')
        .updateOne({ _id: legacy.id as never }, { $unset: { slot: 1 } });
      const of = 4;
      for (const index of [1, 2, 3]) expect(await store.claimDueTimers(10, 1, 0, { index, of })).toEqual([]);
      expect((await store.claimDueTimers(10, 1, 0, { index: 0, of })).map((t) => t.id)).toEqual([legacy.id]);
      for (const index of [1, 2, 3]) expect(await store.pendingEscalations(10, { index, of })).toEqual([]);
      expect((await store.pendingEscalations(10, { index: 0, of })).map((t) => t.id)).toEqual([legacy.id]);
    } finally {
      await cleanup();
    }
  });

  it('every write carries the configured write concern; the sweep reads with readConcern majority', async () => {
    const seen: CommandInfo[] = [];
    const { store, cleanup } = await fresh({ onCommand: (c) => seen.push(c), writeConcern: 'majority', writeTimeoutMs: 4000 });
    try {
      seen.length = 0;
      const t = await armDue(store);
      await store.resolveTimer(t.id, t.userId, 'safe');
      const { timer, incident } = await openedIncident(store);
      await store.markEscalated(timer.id, incident.id);
      await store.transitionIncident(incident.id, ['active'], 'acknowledged', 'mod');
      await store.addDeliveries(incident, newDeliveries(incident.id, 2));
      const [d] = await store.claimDeliveries(10, 60_000);
      if (!d) throw new Error('nothing leased');
      await store.recordAttempt(d.key, d.attempts, { status: 'sent', carrier: 'twilio', providerMessageId: 'SM1' });
      await store.applyReceipt('SM1', 'delivered', ['sent']);
      await store.replaceContacts(randomUUID(), []);
      await store.pendingEscalations(10);

      const writes = seen.filter((c) => ['insert', 'update', 'findAndModify', 'delete'].includes(c.name));
      expect(new Set(writes.map((c) => c.name))).toEqual(new Set(['insert', 'update', 'findAndModify']));
      for (const w of writes) expect(w.writeConcern).toEqual({ w: 'majority', wtimeout: 4000 });
      const sweepReads = seen.filter((c) => c.name === 'find' && c.readConcern !== undefined);
      expect(sweepReads.length).toBeGreaterThanOrEqual(3);
      for (const r of sweepReads) expect(r.readConcern).toEqual({ level: 'majority' });
    } finally {
      await cleanup();
    }
  });

  it('an early receipt older than EARLY_RECEIPT_KEEP_MS is not applied, and is removed when another is kept (no TTL index on FerretDB v1)', async () => {
    const { store, dbName, cleanup } = await fresh();
    try {
      const { incident } = await openedIncident(store);
      await store.addDeliveries(incident, newDeliveries(incident.id, 1));
      const [d] = await store.claimDeliveries(10, 60_000);
      const [old, young] = [`SM${randomUUID().replace(/-/g, '')}`, `SM${randomUUID().replace(/-/g, '')}`];
      expect(await store.applyReceipt(old, 'delivered', receiptFrom('delivered'))).toEqual({ result: 'kept' });
      const early = admin!.useDb(dbName, { useCache: false }).collection<{ _id: string; receivedAt: Date }>('early_receipts');
      // as if it had waited a day and a second
      await early.updateOne({ _id: old }, { $set: { receivedAt: at(await store.now(), -EARLY_RECEIPT_KEEP_MS - 1000) } });
      expect(await store.recordAttempt(d!.key, d!.attempts, { status: 'sent', carrier: 'twilio', providerMessageId: old })).toMatchObject({
        status: 'sent',
      });
      expect(await early.countDocuments({ _id: old })).toBe(1);
      expect(await store.applyReceipt(young, 'sent', receiptFrom('sent'))).toEqual({ result: 'kept' });
      expect(
        await early
          .find()
          .map((r) => r._id)
          .toArray(),
      ).toEqual([young]);
    } finally {
      await cleanup();
    }
  });

  it('close() is idempotent; a closed store is not ready and refuses work', async () => {
    const { store, cleanup } = await fresh();
    await cleanup();
    await store.close();
    expect(await store.ping()).toBe(false);
    await expect(store.getTimer('x')).rejects.toMatchObject({ kind: 'unavailable', code: 'store_closed' });
  });
});

describe.skipIf(!kind)(`mongo extendTimer compares on the values it read (${kind ?? 'no server'})`, () => {
  /**
   * extendTimer reads the timer, then reads the clock, then writes: a Ctx whose clock runs
   * `between` on each call puts another writer exactly between the read and the write,
   * with no timing involved (this is how a second replica's write would interleave).
   */
  async function interleaved(between: (store: MongoStore, call: number) => Promise<void>) {
    const f = await fresh();
    const conn = await mongoose.createConnection(uri ?? '', { dbName: f.dbName, autoIndex: false, autoCreate: false }).asPromise();
    let calls = 0;
    const ctx: Ctx = {
      m: makeModels(conn),
      wc: new mongoose.mongo.WriteConcern('majority', 5000),
      updatesPerCommand: kind === 'ferretdb' ? FERRETDB_UPDATES_PER_COMMAND : Infinity,
      now: async () => {
        await between(f.store, ++calls);
        return f.store.now();
      },
    };
    return { ...f, ctx, calls: () => calls, cleanup: async () => (await conn.close(), await f.cleanup()) };
  }
  const CAPS = { maxExtensions: 10, maxTotalSeconds: 86_400 };

  it('invariant 2: an extension landing between the read and the write is not overwritten: the CAS misses, re-reads, and both count', async () => {
    let t: Awaited<ReturnType<typeof arm>> | undefined;
    const { store, ctx, calls, cleanup } = await interleaved(async (s, call) => {
      if (call === 1 && t) await s.extendTimer(t.id, t.userId, 100, CAPS);
    });
    try {
      t = await arm(store);
      const done = await extendTimer(ctx, t.id, t.userId, 60, CAPS);
      expect(calls()).toBe(2);
      expect(done).toMatchObject({ status: 'extended', extensions: 2, expiresAt: at(t.expiresAt, 160_000) });
      expect(await store.getTimer(t.id)).toEqual(done);
    } finally {
      await cleanup();
    }
  });

  it('maxExtensions holds when another extension takes the last one between the read and the write', async () => {
    let t: Awaited<ReturnType<typeof arm>> | undefined;
    const caps = { ...CAPS, maxExtensions: 1 };
    const { store, ctx, cleanup } = await interleaved(async (s, call) => {
      if (call === 1 && t) await s.extendTimer(t.id, t.userId, 100, caps);
    });
    try {
      t = await arm(store);
      expect(await extendTimer(ctx, t.id, t.userId, 60, caps)).toBeNull();
      expect(await store.getTimer(t.id)).toMatchObject({ extensions: 1, expiresAt: at(t.expiresAt, 100_000) });
    } finally {
      await cleanup();
    }
  });

  it('invariant 6: an "I\'m safe" between the read and the write wins; extend answers null and changes nothing', async () => {
    let t: Awaited<ReturnType<typeof arm>> | undefined;
    const { store, ctx, cleanup } = await interleaved(async (s, call) => {
      if (call === 1 && t) await s.resolveTimer(t.id, t.userId, 'safe');
    });
    try {
      t = await arm(store);
      expect(await extendTimer(ctx, t.id, t.userId, 60, CAPS)).toBeNull();
      expect(await store.getTimer(t.id)).toMatchObject({ status: 'safe', expiresAt: t.expiresAt, extensions: 0 });
    } finally {
      await cleanup();
    }
  });

  it('invariant 6: a retry with the same Idempotency-Key landing between the read and the write → replayed, extended once', async () => {
    let t: Awaited<ReturnType<typeof arm>> | undefined;
    const idem = { key: randomUUID(), fingerprint: 'f1' };
    const { store, ctx, cleanup } = await interleaved(async (s, call) => {
      if (call === 1 && t) await s.extendTimerKeyed(t.id, t.userId, 60, CAPS, idem);
    });
    try {
      t = await arm(store);
      const r = await extendTimerKeyed(ctx, t.id, t.userId, 60, CAPS, idem);
      expect(r).toEqual({ kind: 'replayed', timer: await store.getTimer(t.id) });
      expect(await store.getTimer(t.id)).toMatchObject({ extensions: 1, expiresAt: at(t.expiresAt, 60_000) });
    } finally {
      await cleanup();
    }
  });

  it('a timer that changes before every write → 409 extend_contended after a bounded number of attempts', async () => {
    let t: Awaited<ReturnType<typeof arm>> | undefined;
    const { store, ctx, calls, cleanup } = await interleaved(async (s) => {
      if (t) await s.extendTimer(t.id, t.userId, 1, CAPS);
    });
    try {
      t = await arm(store);
      await expect(extendTimer(ctx, t.id, t.userId, 60, CAPS)).rejects.toMatchObject({ kind: 'conflict', code: 'extend_contended' });
      expect(calls()).toBe(5);
      expect(await store.getTimer(t.id)).toMatchObject({ extensions: 5, expiresAt: at(t.expiresAt, 5_000) });
    } finally {
      await cleanup();
    }
  });
});

describe('mongo store start-up', () => {
  it('fails fast with a clear message, without credentials, when no server answers', async () => {
    const port = await freePort();
    const err: unknown = await MongoStore.connect({
      uri: `mongodb://vigil:s3cret@127.0.0.1:${port}/vigil`,
      serverSelectionTimeoutMs: 300,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ kind: 'unavailable', code: 'store_unreachable' });
    const message = (err as Error).message;
    expect(message).toContain(`cannot reach MongoDB at mongodb://127.0.0.1:${port}/vigil within 300 ms`);
    expect(message).not.toContain('s3cret');
  });

  it('refuses an invalid write concern', async () => {
    await expect(MongoStore.connect({ uri: 'mongodb://127.0.0.1:1/x', writeConcern: 0 })).rejects.toMatchObject({ kind: 'invalid' });
  });
});

describe.skipIf(!ferret)(
  ferret
    ? 'mongo store when the server goes away'
    : 'mongo store when the server goes away (skipped: needs a FerretDB this test can stop; a MONGODB_URI server is not stopped by tests)',
  () => {
    it('ping answers false and operations fail as unavailable (503), not as bugs', async () => {
      const own = await startFerretDb();
      const store = await MongoStore.connect({ uri: own.uri, dbName: 'vigil', serverSelectionTimeoutMs: 500, pingTimeoutMs: 500 });
      try {
        expect(await store.ping()).toBe(true);
        await own.stop();
        expect(await store.ping()).toBe(false);
        await expect(store.getTimer('x')).rejects.toMatchObject({ kind: 'unavailable', code: 'store_unavailable' });
      } finally {
        await store.close();
        await own.stop();
      }
    });
  },
);

describe('server clock', () => {
  const fakeServer = (times: number[]) => {
    let calls = 0;
    return {
      read: async () => new Date(times[Math.min(calls++, times.length - 1)] ?? 0),
      calls: () => calls,
    };
  };

  it('reads the server once per refresh window and advances locally in between', async () => {
    const server = fakeServer([1_000_000]);
    const clock = new ServerClock(server.read, 600_000);
    const a = await clock.now();
    const b = await clock.now();
    expect(server.calls()).toBe(1);
    expect(a.getTime()).toBeGreaterThanOrEqual(1_000_000);
    expect(b.getTime()).toBeGreaterThanOrEqual(a.getTime());
  });

  it('refreshMs 0 asks the server on every call; concurrent calls share one request', async () => {
    const server = fakeServer([1_000, 2_000, 3_000]);
    const clock = new ServerClock(server.read, 0);
    await clock.now();
    await clock.now();
    expect(server.calls()).toBe(2);
    await Promise.all([clock.now(), clock.now(), clock.now()]);
    expect(server.calls()).toBe(3);
  });

  it('never goes backwards when the server clock steps back', async () => {
    const server = fakeServer([5_000_000, 1_000]);
    const clock = new ServerClock(server.read, 0);
    const before = await clock.now();
    const after = await clock.now();
    expect(server.calls()).toBe(2);
    expect(after.getTime()).toBeGreaterThanOrEqual(before.getTime());
  });
});

describe.skipIf(!kind)(
  `mongo: a line lost between a moderator's CAS and its audit line is filled in by a repeat (${kind ?? 'no server'})`,
  () => {
    /**
     * No multi-document transaction here: the CAS stamps who acted, the line follows. A Ctx whose
     * audit model refuses every write stands for a crash between the two: the change stands, the line
     * is missing, and the repeat of the command (the API's answer to an error is to try again) writes it.
     */
    async function auditDown() {
      const f = await fresh();
      const conn = await mongoose.createConnection(uri ?? '', { dbName: f.dbName, autoIndex: false, autoCreate: false }).asPromise();
      const m = makeModels(conn);
      const audit = new Proxy(m.audit, {
        get: (target, p, receiver) =>
          p === 'bulkWrite' ? () => Promise.reject(new Error('audit down')) : (Reflect.get(target, p, receiver) as unknown),
      });
      const ctx: Ctx = {
        m: { ...m, audit },
        wc: new mongoose.mongo.WriteConcern('majority', 5000),
        updatesPerCommand: kind === 'ferretdb' ? FERRETDB_UPDATES_PER_COMMAND : Infinity,
        now: () => f.store.now(),
      };
      return { ...f, ctx, cleanup: async () => (await conn.close(), await f.cleanup()) };
    }

    it('acknowledge and resolve', async () => {
      const { store, ctx, cleanup } = await auditDown();
      try {
        const { incident } = await openedIncident(store);
        await expect(transitionIncident(ctx, incident.id, ['active'], 'acknowledged', 'mod-ann', { audit: true })).rejects.toThrow(
          'audit down',
        );
        await expect(transitionIncident(ctx, incident.id, ['acknowledged'], 'resolved', 'mod-bob', { audit: true })).rejects.toThrow(
          'audit down',
        );
        expect((await store.getIncident(incident.id))?.status).toBe('resolved');
        expect(await store.listAudit({ limit: 10 })).toEqual([]);
        // the repeats (IncidentService answers them as no-ops) write the lines, naming who acted first
        await store.transitionIncident(incident.id, [], 'acknowledged', 'mod-cat', { audit: true });
        await store.transitionIncident(incident.id, [], 'resolved', 'mod-cat', { audit: true });
        await store.transitionIncident(incident.id, [], 'resolved', 'mod-cat', { audit: true });
        const lines = await store.listAudit({ limit: 10 });
        expect(lines.map((l) => [l.id, l.actor]).sort()).toEqual([
          [`ack:${incident.id}`, 'mod-ann'],
          [`resolve:${incident.id}`, 'mod-bob'],
        ]);
      } finally {
        await cleanup();
      }
    });

    it('retry of a dead-lettered escalation', async () => {
      const { store, ctx, cleanup } = await auditDown();
      try {
        const { timer } = await openedIncident(store);
        await store.recordEscalationFailure(timer.id, 'boom', 1);
        await expect(retryEscalation(ctx, timer.id, 'mod-ann')).rejects.toThrow('audit down');
        expect((await store.getTimer(timer.id))?.escalation).toBe('pending');
        expect(await store.listAudit({ limit: 10 })).toEqual([]);
        expect(await store.retryEscalation(timer.id, 'mod-bob')).toBeNull();
        expect(await store.retryEscalation(timer.id, 'mod-bob')).toBeNull();
        const lines = await store.listAudit({ limit: 10 });
        expect(lines.map((l) => [l.action, l.actor, l.person])).toEqual([['escalation.retry', 'mod-ann', timer.userId]]);
      } finally {
        await cleanup();
      }
    });
  },
);
