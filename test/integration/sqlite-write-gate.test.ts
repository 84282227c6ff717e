/**
 * The SQLite store waits for another process's write lock off the event loop (WriteGate):
 * while the file is locked, this process still answers (reads, timers, other requests);
 * its waiting writes run in the order they were made once the lock goes; a write that waits
 * too long fails as store_busy and changes nothing; writes that waited share one commit, and
 * one of them failing changes nothing of it and nothing of the others. On a shared file, SQLite's own busy
 * handler slept with the event loop blocked: one replica's burst stalled every other
 * replica's check-ins.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore, sqliteOperations } from '../../src/store/sqlite/sqlite-store.js';
import { WriteGate } from '../../src/store/sqlite/write-gate.js';
import { holdWriteLock, type LockHolder } from '../helpers/sqlite-lock-holder.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';
import { startTestVigil } from '../helpers/vigil.js';

/** settles → its state; still pending after a few event-loop turns → 'pending' */
async function state(p: Promise<unknown>): Promise<'pending' | 'fulfilled' | 'rejected'> {
  let s: 'pending' | 'fulfilled' | 'rejected' = 'pending';
  p.then(
    () => (s = 'fulfilled'),
    () => (s = 'rejected'),
  );
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return s;
}

const contact = (name: string) => ({ id: `c-${name}`, name, phone: '+14155550100' });

let tmp: TempSqliteStore;
let file: string;
let holder: LockHolder | undefined;
let store: SqliteStore | undefined;

beforeEach(async () => {
  tmp = await tempSqliteStore();
  file = tmp.file;
  await tmp.store.close(); // the migrations, before anyone holds the lock
});

afterEach(async () => {
  await holder?.release();
  holder = undefined;
  await store?.close();
  store = undefined;
  await tmp.cleanup();
});

/** a connection of its own to the test file, with a table `t (v)` and a gate that waits up to `waitMs`; closed after `body` */
async function withGate(waitMs: number, body: (c: { db: Database.Database; gate: WriteGate }) => Promise<void>): Promise<void> {
  const db = new Database(file, { timeout: waitMs });
  try {
    db.exec('CREATE TABLE t (v INTEGER)');
    await body({ db, gate: new WriteGate(db, waitMs) });
  } finally {
    db.close();
  }
}

describe('SQLite write gate', () => {
  it('every store operation is declared a read or a write where it is defined, and the class has no method that is neither', async () => {
    store = await SqliteStore.open({ file });
    const { operations, undeclared } = sqliteOperations(store);
    expect(operations.size).toBeGreaterThan(50);
    expect([...operations.values()].filter((a) => a !== 'read' && a !== 'write')).toEqual([]);
    expect(undeclared).toEqual([]);
  });

  it('free event loop: a write waiting for another process lock is pending while reads and timers of this process go on; it runs once the lock goes', async () => {
    store = await SqliteStore.open({ file, busyTimeoutMs: 60_000 });
    await store.replaceContacts('u1', [contact('before')]);
    holder = await holdWriteLock(file);

    const write = store.replaceContacts('u1', [contact('after')]);
    // with SQLite's busy handler the call itself would block until the lock went or the timeout ran out
    expect(await state(write)).toBe('pending');
    const ticked = await new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 20));
    expect(ticked).toBe(true);
    expect((await store.getContacts('u1')).map((c) => c.name)).toEqual(['before']); // reads answer (WAL)
    expect(await state(write)).toBe('pending');

    await holder.release();
    expect((await write).map((c) => c.name)).toEqual(['after']);
    expect((await store.getContacts('u1')).map((c) => c.name)).toEqual(['after']);
    expect(store.writeGateStats()).toMatchObject({ waited: 1, timedOut: 0 });
  });

  it('free event loop from the first write: a gate whose very first write finds the lock taken waits off the event loop', async () => {
    await withGate(120_000, async ({ db, gate }) => {
      holder = await holdWriteLock(file);
      // with the busy timeout in force for this first try, the call itself would block for two minutes
      const write = Promise.resolve(gate.run(() => db.prepare('INSERT INTO t VALUES (1)').run().changes));
      expect(await state(write)).toBe('pending');
      await holder.release();
      expect(await write).toBe(1);
      expect(gate.stats).toMatchObject({ immediate: 0, waited: 1 });
    });
  }, 30_000);

  it('order: writes of one process that wait for the lock commit in the order they were made', async () => {
    store = await SqliteStore.open({ file, busyTimeoutMs: 60_000 });
    holder = await holdWriteLock(file);
    const done: string[] = [];
    const writes = ['a', 'b', 'c', 'd', 'e'].map((n) =>
      store!.replaceContacts('u2', [contact(n)]).then(() => {
        done.push(n);
      }),
    );
    expect(await state(Promise.all(writes))).toBe('pending');
    await holder.release();
    await Promise.all(writes);
    expect(done).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect((await store.getContacts('u2')).map((c) => c.name)).toEqual(['e']);
  });

  it('a write that waits past the busy timeout fails as store_busy and changes nothing', async () => {
    store = await SqliteStore.open({ file, busyTimeoutMs: 100 });
    await store.replaceContacts('u3', [contact('kept')]);
    holder = await holdWriteLock(file);
    await expect(store.replaceContacts('u3', [contact('lost')])).rejects.toMatchObject({ code: 'store_busy' });
    expect(store.writeGateStats()).toMatchObject({ timedOut: 1 });
    await holder.release();
    expect((await store.getContacts('u3')).map((c) => c.name)).toEqual(['kept']);
  });

  it('closing the store fails the writes still waiting as store_closed', async () => {
    store = await SqliteStore.open({ file, busyTimeoutMs: 60_000 });
    holder = await holdWriteLock(file);
    const write = store.replaceContacts('u4', [contact('x')]);
    expect(await state(write)).toBe('pending');
    await store.close();
    await expect(write).rejects.toMatchObject({ code: 'store_closed' });
  });

  it('the on-call sees it: /metrics counts writes that found the lock free, that waited, that timed out, the time waited and the commits of those that waited', async () => {
    const v = await startTestVigil({ SQLITE_BUSY_TIMEOUT_MS: '300' }, { manualTicks: true });
    try {
      const tok = v.token('gate-metrics');
      const put = (name: string) =>
        fetch(`${v.url}/v1/me/contacts`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
          body: JSON.stringify({ contacts: [{ name, phone: '+14155550100' }] }),
        });
      expect((await put('A')).status).toBe(200);
      const lock = await holdWriteLock(join(v.dataDir, 'vigil.db'));
      try {
        expect((await put('B')).status).toBe(503); // waited 300 ms, then store_busy
        const waiting = put('C');
        await new Promise((r) => setTimeout(r, 50));
        await lock.release();
        expect((await waiting).status).toBe(200);
      } finally {
        await lock.release();
      }
      const page = await (await fetch(`${v.url}/metrics`)).text();
      const value = (series: string) =>
        Number(
          page
            .split('\n')
            .find((l) => l.startsWith(series))
            ?.split(' ')
            .at(-1),
        );
      expect(value('vigil_sqlite_writes_total{lock="free"')).toBeGreaterThanOrEqual(1);
      expect(value('vigil_sqlite_writes_total{lock="waited"')).toBe(2);
      expect(value('vigil_sqlite_writes_total{lock="timed_out"')).toBe(1);
      expect(value('vigil_sqlite_write_wait_seconds_total')).toBeGreaterThanOrEqual(0.3);
      expect(value('vigil_sqlite_group_commits_total')).toBe(1); // C's commit; B never got the lock
    } finally {
      await v.stop();
    }
  });

  it('group commit: writes that waited for the lock share one commit; each gets its own answer, in order, and sees the ones before it', async () => {
    await withGate(60_000, async ({ db, gate }) => {
      const insert = db.prepare('INSERT INTO t VALUES (?)');
      const count = db.prepare('SELECT count(*) FROM t').pluck();
      holder = await holdWriteLock(file);
      const writes = [1, 2, 3, 4, 5].map((v) =>
        Promise.resolve(
          gate.run(() => {
            insert.run(v);
            return count.get(); // the rows of this write and of the ones before it
          }),
        ),
      );
      expect(await state(Promise.all(writes))).toBe('pending');
      await holder.release();
      expect(await Promise.all(writes)).toEqual([1, 2, 3, 4, 5]);
      expect(gate.stats).toMatchObject({ waited: 5, groupCommits: 1, timedOut: 0 });
      expect(db.prepare('SELECT v FROM t ORDER BY rowid').pluck().all()).toEqual([1, 2, 3, 4, 5]);
    });
  });

  it('group commit: a write that fails in a group leaves nothing behind, and the writes around it still commit, in order', async () => {
    await withGate(60_000, async ({ db, gate }) => {
      const insert = db.prepare('INSERT INTO t VALUES (?)');
      holder = await holdWriteLock(file);
      const ok = (v: number) => Promise.resolve(gate.run(() => insert.run(v).changes));
      const writes = [
        ok(1),
        // throws after writing
        Promise.resolve(
          gate.run(() => {
            insert.run(2);
            throw new Error('two');
          }),
        ),
        ok(3),
        // a transaction() inside fails and the method answers a rejected promise (as an async store method does)
        Promise.resolve(
          gate.run(() => {
            try {
              db.transaction(() => {
                insert.run(4);
                throw new Error('four');
              })();
              return 'unreachable';
            } catch (err) {
              return Promise.reject(err);
            }
          }),
        ),
        ok(5),
      ];
      const settled = Promise.allSettled(writes);
      expect(await state(settled)).toBe('pending');
      await holder.release();
      const out = await settled;
      expect(out.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([1, 'two', 1, 'four', 1]);
      expect(db.prepare('SELECT v FROM t ORDER BY rowid').pluck().all()).toEqual([1, 3, 5]);
      expect(db.inTransaction).toBe(false);
    });
  });

  it('a write that throws rolls its whole transaction back: nothing of it stays, and the next write runs', async () => {
    await withGate(1000, async ({ db, gate }) => {
      expect(() =>
        gate.run(() => {
          db.prepare('INSERT INTO t VALUES (1)').run(); // an autocommit statement of its own before the gate
          throw new Error('boom');
        }),
      ).toThrow('boom');
      expect(db.inTransaction).toBe(false);
      expect(gate.run(() => db.prepare('INSERT INTO t VALUES (2)').run().changes)).toBe(1);
      expect(db.prepare('SELECT v FROM t').pluck().all()).toEqual([2]);
    });
  });
});
