/**
 * Issue 35, item 12: every MongoDB store operation is bounded. A proxy on the wire
 * (test/helpers/wire-faults.ts) swallows one command: the connection stays open and nothing
 * ever answers, as a hung server or a half-dead TCP peer would. The operation fails within
 * `operationTimeoutMs` as the store's retryable error (503 `store_unavailable`) instead of a
 * promise that never settles, and the store goes on working once the server answers again.
 */
import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { MongoStore } from '../../src/store/mongo/mongo-store.js';
import { withinMs } from '../helpers/deadline.js';
import { FERRET_MISSING, ferretAvailable, startFerretDb } from '../helpers/ferretdb.js';
import { startFaultProxy } from '../helpers/wire-faults.js';
import { arm, newTimer } from './store-contract-helpers.js';

type Doc = Record<string, unknown>;

const ferret = ferretAvailable() ? await startFerretDb() : undefined;
const proxy = ferret ? await startFaultProxy(ferret.uri) : undefined;
const admin = ferret ? await mongoose.createConnection(ferret.uri, { serverSelectionTimeoutMS: 5000 }).asPromise() : undefined;

afterAll(async () => {
  await admin?.close();
  await proxy?.stop();
  await ferret?.stop();
});

const OPERATION_TIMEOUT_MS = 1000;
/** far above the bound: an operation still pending then would never have ended */
const HUNG_AFTER_MS = 8000;
const UNAVAILABLE = { kind: 'unavailable', code: 'store_unavailable' };
const CAPS = { maxExtensions: 10, maxTotalSeconds: 86_400 };

describe.skipIf(!proxy)(
  proxy ? 'mongo store: a server that never answers' : `mongo store: a server that never answers [${FERRET_MISSING}]`,
  () => {
    let store: MongoStore | undefined;
    let dbName = '';
    const open = () => {
      if (!store) throw new Error('no store');
      return store;
    };
    const silent = (match: (c: Doc) => boolean) => proxy?.inject({ match, action: { kind: 'silent' } });

    beforeEach(async () => {
      dbName = `vigil_hung_${randomUUID().replace(/-/g, '')}`;
      store = await MongoStore.connect({
        uri: proxy!.uri,
        dbName,
        serverSelectionTimeoutMs: 5000,
        writeTimeoutMs: 500,
        operationTimeoutMs: OPERATION_TIMEOUT_MS,
      });
    });

    afterEach(async () => {
      // a fault left armed means the operation under test never sent the command it names
      expect(proxy?.pending()).toBe(0);
      await store?.close();
      await admin?.useDb(dbName, { useCache: false }).dropDatabase();
    });

    it('a read (find) that is never answered fails as 503 store_unavailable; the next read answers', async () => {
      const s = open();
      const t = await arm(s);
      silent((c) => c.find === 'timers');
      await expect(withinMs(s.getTimer(t.id), HUNG_AFTER_MS, 'getTimer on a silent server')).rejects.toMatchObject(UNAVAILABLE);
      expect(await s.getTimer(t.id)).toMatchObject({ id: t.id });
    });

    it('a CAS write (findAndModify) that is never answered fails as 503 store_unavailable; a retry settles it', async () => {
      const s = open();
      const t = await arm(s);
      silent((c) => c.findAndModify === 'timers');
      await expect(
        withinMs(s.extendTimer(t.id, t.userId, 60, CAPS), HUNG_AFTER_MS, 'extendTimer on a silent server'),
      ).rejects.toMatchObject(UNAVAILABLE);
      // the swallowed write never reached the server: the retry applies it once
      expect(await s.extendTimer(t.id, t.userId, 60, CAPS)).toMatchObject({ id: t.id, extensions: 1 });
    });

    it('an insert that is never answered fails as 503 store_unavailable; a retry creates the timer', async () => {
      const s = open();
      const t = await newTimer(s);
      silent((c) => c.insert === 'timers');
      await expect(withinMs(s.armTimer(t), HUNG_AFTER_MS, 'armTimer on a silent server')).rejects.toMatchObject(UNAVAILABLE);
      expect(await s.armTimer(t)).toMatchObject({ kind: 'created' });
    });

    it('a delivery claim that is never answered fails as 503 store_unavailable (the dispatcher tick ends)', async () => {
      const s = open();
      silent((c) => c.find === 'deliveries' || c.findAndModify === 'deliveries' || c.update === 'deliveries');
      await expect(withinMs(s.claimDeliveries(10, 30_000), HUNG_AFTER_MS, 'claimDeliveries on a silent server')).rejects.toMatchObject(
        UNAVAILABLE,
      );
    });

    it('ping on a silent server answers false within its timeout (readiness)', async () => {
      const s = open();
      silent((c) => c.ping === 1);
      expect(await withinMs(s.ping(), HUNG_AFTER_MS, 'ping on a silent server')).toBe(false);
      expect(await s.ping()).toBe(true);
    });
  },
);

describe('the operation bound is validated', () => {
  it('MONGODB_OPERATION_TIMEOUT_MS must exceed MONGODB_WRITE_TIMEOUT_MS (a write hears wtimeout before its deadline)', () => {
    expect(() => loadConfig({ MONGODB_WRITE_TIMEOUT_MS: '5000', MONGODB_OPERATION_TIMEOUT_MS: '5000' })).toThrow(ConfigError);
    expect(() => loadConfig({ MONGODB_WRITE_TIMEOUT_MS: '5000', MONGODB_OPERATION_TIMEOUT_MS: '5000' })).toThrow(
      /MONGODB_OPERATION_TIMEOUT_MS/,
    );
  });

  it('MongoStore.connect refuses it too, before connecting', async () => {
    await expect(
      MongoStore.connect({ uri: 'mongodb://127.0.0.1:1/x', writeTimeoutMs: 2000, operationTimeoutMs: 1000 }),
    ).rejects.toMatchObject({ kind: 'invalid', code: 'invalid_operation_timeout' });
  });
});
