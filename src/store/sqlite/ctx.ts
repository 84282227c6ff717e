/**
 * What every area module of the SQLite store (./timers.ts, ./incidents.ts, …) works with, and
 * how each of its operations says whether it writes. An operation is declared where it is
 * defined, `read(…)` or `write(…)`; the store (./sqlite-store.ts) runs a write through the
 * WriteGate (./write-gate.ts: the file's write lock taken without blocking the event loop,
 * waiting writes committed together) and a read as it is (in WAL mode a reader never waits
 * for the writer). The store accepts nothing else, so an operation cannot be left unclassified.
 */
import type Database from 'better-sqlite3';
import type { Statements } from './statements.js';

export interface Ctx {
  db: Database.Database;
  /** every statement of the store, prepared once (./statements.ts) */
  st: Statements;
  /** the store's clock (epoch ms) */
  clock: () => number;
}

export type Access = 'read' | 'write';

/** An operation of the store: synchronous code on the connection, and whether it writes. */
export interface Operation<A extends unknown[], R> {
  readonly access: Access;
  readonly run: (c: Ctx, ...args: A) => R;
}

/** Only reads: runs as it is. */
export const read = <A extends unknown[], R>(run: (c: Ctx, ...args: A) => R): Operation<A, R> => ({ access: 'read', run });

/** Writes (or may): runs in a write transaction of the WriteGate. */
export const write = <A extends unknown[], R>(run: (c: Ctx, ...args: A) => R): Operation<A, R> => ({ access: 'write', run });
