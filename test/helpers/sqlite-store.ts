/**
 * A SQLite store on a file of its own in a throwaway folder, as the embedded service opens it
 * (`SqliteStore.open`, migrations included). `cleanup()` closes the store and removes the
 * folder; it is safe after the test closed the store itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore, type SqliteOptions } from '../../src/store/sqlite/sqlite-store.js';

export interface TempSqliteFile {
  /** the throwaway folder */
  dir: string;
  /** `vigil.db` in it (not created yet) */
  file: string;
  /** removes the folder and everything in it */
  cleanup(): void;
}

export interface TempSqliteStore extends Omit<TempSqliteFile, 'cleanup'> {
  store: SqliteStore;
  /** closes the store, then removes the folder */
  cleanup(): Promise<void>;
}

/** A folder and a database path for a test that opens the file itself (raw, reopened, another process). */
export function tempSqliteFile(): TempSqliteFile {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-test-'));
  return { dir, file: join(dir, 'vigil.db'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A fresh store on a new file; `opts` as `SqliteStore.open` takes them (a clock, a busy timeout). */
export async function tempSqliteStore(opts: Omit<SqliteOptions, 'file'> = {}): Promise<TempSqliteStore> {
  const tmp = tempSqliteFile();
  const store = await SqliteStore.open({ ...opts, file: tmp.file });
  return {
    store,
    dir: tmp.dir,
    file: tmp.file,
    cleanup: async () => {
      await store.close();
      tmp.cleanup();
    },
  };
}
