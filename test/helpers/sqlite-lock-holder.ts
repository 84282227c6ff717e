/**
 * Another process that takes a SQLite file's write lock (`BEGIN IMMEDIATE`) and holds it
 * until released. Another process, because better-sqlite3 is synchronous: a second
 * connection in the test's own process would block it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

const HOLDER = `
const Database = require('better-sqlite3');
const db = new Database(process.argv[1]);
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\\n');
process.stdin.on('end', () => { db.exec('ROLLBACK'); db.close(); process.exit(0); });
process.stdin.resume();
`;

export interface LockHolder {
  /** roll back, close and wait for the process to exit; safe to call twice */
  release(): Promise<void>;
}

/** Resolves once the lock is held. */
export async function holdWriteLock(file: string): Promise<LockHolder> {
  const child = spawn(process.execPath, ['-e', HOLDER, file], { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) if (line === 'locked') break;
  let released: Promise<void> | undefined;
  return {
    release() {
      released ??= (async () => {
        if (child.exitCode !== null) return;
        child.stdin!.end();
        await once(child, 'exit');
      })();
      return released;
    },
  };
}
