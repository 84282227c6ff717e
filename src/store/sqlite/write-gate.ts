/**
 * Waiting for the SQLite write lock without blocking the event loop.
 *
 * Several processes may share one SQLite file, and only one of them can write at a time.
 * SQLite's own busy handler waits inside the call: the process sleeps 1, 2, 5, 10 … up to
 * 100 ms at a time with its event loop blocked (no HTTP answer, no socket, no lease
 * renewal), and it only looks at the lock when a sleep ends, so a lock freed for two
 * milliseconds between another process's commits is usually missed.
 *
 * The gate takes the lock itself instead: `BEGIN IMMEDIATE` with a zero busy timeout. When
 * the file is free the write runs at once, in that transaction, exactly as before (the
 * store's own `transaction()` calls run flat inside it: see flattenTransactions). When another
 * process holds the lock the write waits in a queue and the gate tries again every
 * millisecond from a timer, so the event loop stays free and the lock is taken within about
 * a millisecond of being released. Writes from this process keep their order (first in,
 * first out); a write that waited longer than `waitMs` fails with the last SQLITE_BUSY, which
 * the store reports as `store_busy` (503), as the busy timeout did.
 *
 * Writes that waited share a commit: once the gate has the lock it runs the waiting writes,
 * in order, in one transaction (at most MAX_GROUP of them) and commits them together. Each
 * commit is an fsync of the WAL (`synchronous=FULL`), about a millisecond on this machine's
 * disk, and while the lock is contended the fsyncs are what the processes queue for: three
 * processes on one file recording texts one outcome at a time spent their lock holding
 * mostly on them. Each write still sees the ones before it, as if committed one by one; none
 * is answered before the commit. When one of the group fails (throws, or a transaction()
 * inside it failed), the whole group rolls back and its writes run again one per
 * transaction, so the failure stays its own and the others commit as they would have.
 * A write that found the lock free and nothing waiting runs at once, alone, as before.
 *
 * A write is synchronous code (better-sqlite3): it runs whole between BEGIN and COMMIT, so
 * nothing else on this connection can interleave with it. Reads do not come here: in WAL
 * mode they never wait for the writer.
 */
import type Database from 'better-sqlite3';
import type { WriteGateStats } from '../port-write-gate.js';
import { isBusy } from './errors.js';

// the port declares the counters; sqlite-store.ts imports them from here
export type { WriteGateStats };

interface Waiter {
  run: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  since: number;
  giveUpAt: number;
  /** its group failed: it runs again in a transaction of its own */
  alone?: boolean;
}

/** most waiting writes in one transaction (a group that fails runs again one by one) */
const MAX_GROUP = 64;

export class WriteGate {
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  /** the busy timeout to put back after each try, ms */
  private readonly waitSetting: string;
  private readonly queue: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** inside the gate's own transaction */
  private holding = false;
  /** a transaction() of the store failed inside it: roll the whole write back */
  private failed = false;
  readonly stats: WriteGateStats = { immediate: 0, waited: 0, timedOut: 0, waitedMs: 0, groupCommits: 0 };

  constructor(
    private readonly db: Database.Database,
    /** how long a write may wait for another process's lock (ms), as the busy timeout did */
    private readonly waitMs: number,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.waitSetting = `busy_timeout = ${Math.max(0, Math.floor(waitMs))}`;
    this.flattenTransactions();
  }

  /**
   * The store's own `db.transaction(fn)` calls, run inside the gate's transaction, call `fn`
   * as it is instead of opening a savepoint: the gate's transaction is already the unit that
   * commits or rolls back, and a savepoint costs a copy of every page the write touches (a
   * burst's group commits measured 7–25 % slower with them). When `fn` throws, the whole write
   * rolls back, also when the store's method turns the throw into a rejected promise (an
   * `async` method does) and so returns normally. Outside the gate (migrations) they are
   * better-sqlite3's own.
   */
  private flattenTransactions(): void {
    const db = this.db;
    const original = db.transaction.bind(db);
    const flat =
      <A extends unknown[], R>(own: (...args: A) => R, fn: (...args: A) => R) =>
      (...args: A): R => {
        if (!this.holding) return own(...args);
        try {
          return fn(...args);
        } catch (err) {
          this.failed = true;
          throw err;
        }
      };
    db.transaction = (<F extends (...args: never[]) => unknown>(fn: F) => {
      const own = original(fn);
      return Object.assign(flat(own, fn), {
        default: flat(own.default, fn),
        deferred: flat(own.deferred, fn),
        immediate: flat(own.immediate, fn),
        exclusive: flat(own.exclusive, fn),
      });
    }) as typeof db.transaction;
  }

  /**
   * Run `write` in a write transaction of its own. Its result as it returned it when the lock
   * was free and nothing of this process waits; otherwise a promise of it. `write` runs nested
   * (as it is) when this connection is already inside a transaction.
   */
  run(write: () => unknown): unknown {
    if (this.db.inTransaction) return write();
    if (this.queue.length === 0) {
      const taken = this.tryBegin();
      if (taken === true) {
        this.stats.immediate++;
        return this.inTransaction(write);
      }
    }
    return new Promise((resolve, reject) => {
      this.stats.waited++;
      const since = this.clock();
      this.queue.push({ run: write, resolve, reject, since, giveUpAt: since + this.waitMs });
      this.schedule();
    });
  }

  /** Waiting writes fail (the store is closing). */
  close(err: unknown): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.queue.splice(0)) w.reject(err);
  }

  /** true, or the SQLITE_BUSY that refused the lock; anything else throws. */
  private tryBegin(): true | unknown {
    // db.pragma(), not a statement prepared once: SQLite applies `PRAGMA busy_timeout = N`
    // when the statement is prepared, so the first run of a prepared one changed nothing and
    // the first write of a new store waited out the whole timeout inside the call
    this.db.pragma('busy_timeout = 0');
    try {
      this.begin.run();
      return true;
    } catch (err) {
      if (isBusy(err)) return err;
      throw err;
    } finally {
      this.db.pragma(this.waitSetting);
    }
  }

  private inTransaction(write: () => unknown): unknown {
    let out: unknown;
    this.holding = true;
    this.failed = false;
    try {
      out = write();
    } catch (err) {
      if (this.db.inTransaction) this.rollback.run();
      throw err;
    } finally {
      this.holding = false;
    }
    try {
      // a transaction() inside failed and the method answered a rejected promise: nothing of it stays
      if (this.failed) this.rollback.run();
      else this.commit.run();
    } catch (err) {
      if (this.db.inTransaction) this.rollback.run();
      throw err;
    }
    return out;
  }

  private schedule(): void {
    if (this.timer || this.queue.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.drain();
    }, 1);
  }

  /** Run every waiting write the lock can be had for, in order, in groups; wait again when another process takes it. */
  private drain(): void {
    while (this.queue.length > 0) {
      // writes are synchronous, so no transaction is open between two timer callbacks; if one
      // were (a bug elsewhere), committing it on the next write's behalf would be wrong: wait
      if (this.db.inTransaction) break;
      let taken: true | unknown;
      try {
        taken = this.tryBegin();
      } catch (err) {
        this.queue.shift()!.reject(err);
        continue;
      }
      if (taken !== true) {
        const now = this.clock();
        while (this.queue.length > 0 && this.queue[0]!.giveUpAt <= now) {
          const late = this.queue.shift()!;
          this.stats.timedOut++;
          this.stats.waitedMs += now - late.since;
          late.reject(taken);
        }
        break;
      }
      this.runGroup();
    }
    this.schedule();
  }

  /**
   * In the transaction drain() just began: the waiting writes from the head of the queue, up
   * to MAX_GROUP and up to the first that must run alone, then one commit for them all.
   */
  private runGroup(): void {
    let size = 1;
    if (!this.queue[0]!.alone) while (size < Math.min(MAX_GROUP, this.queue.length) && !this.queue[size]!.alone) size++;
    const group = this.queue.splice(0, size);
    const started = this.clock();
    const ran = () => {
      this.stats.groupCommits++;
      for (const w of group) this.stats.waitedMs += started - w.since;
    };
    if (group.length === 1) {
      const only = group[0]!;
      ran();
      try {
        only.resolve(this.inTransaction(only.run));
      } catch (err) {
        only.reject(err);
      }
      return;
    }
    const out: unknown[] = [];
    let failed = false;
    this.holding = true;
    try {
      for (const w of group) {
        this.failed = false;
        out.push(w.run());
        if (this.failed) {
          failed = true;
          break;
        }
      }
    } catch {
      failed = true;
    } finally {
      this.holding = false;
    }
    if (failed) {
      // nothing of the group stays; each runs again alone, first in the queue, in its order
      if (this.db.inTransaction) this.rollback.run();
      for (const w of group) w.alone = true;
      this.queue.unshift(...group);
      return;
    }
    ran();
    try {
      this.commit.run();
    } catch (err) {
      if (this.db.inTransaction) this.rollback.run();
      for (const w of group) w.reject(err);
      return;
    }
    group.forEach((w, i) => w.resolve(out[i]));
  }
}
