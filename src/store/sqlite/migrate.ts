/**
 * Numbered migrations: `migrations/NNN_name.sql`, applied in order inside one
 * transaction each, recorded in `schema_migrations`. Safe when several processes
 * start at once on the same file (the write lock is taken before reading the version).
 */
import type Database from 'better-sqlite3';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

export function migrate(db: Database.Database): number[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const files = readdirSync(DIR)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
  const applied: number[] = [];
  for (const file of files) {
    const version = Number(file.split('_')[0]);
    const run = db.transaction(() => {
      const done = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(version);
      if (done) return;
      db.exec(readFileSync(DIR + file, 'utf8'));
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(version, Date.now());
      applied.push(version);
    });
    run.immediate();
  }
  return applied;
}
