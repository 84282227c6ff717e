/**
 * docs/privacy.md lists every kind of record with its lifetime ("Every kind of record and its
 * lifetime"). This checks that list against the schema of both stores: every SQLite table (as
 * the migrations make it) and every MongoDB collection (as the models name them) has a line,
 * and every name on a line exists. Adding a table or a collection without a line fails here.
 */
import { readFileSync } from 'node:fs';
import mongoose from 'mongoose';
import { afterAll, describe, expect, it } from 'vitest';
import { makeModels } from '../../src/store/mongo/schemas.js';
import { tempSqliteStore } from '../helpers/sqlite-store.js';
import Database from 'better-sqlite3';

const SECTION = '## Every kind of record and its lifetime';

/** The names in backticks of column `col` (1-based after the record name) of the section's table. */
function listed(col: 2 | 3): Set<string> {
  const doc = readFileSync('docs/privacy.md', 'utf8');
  const start = doc.indexOf(SECTION);
  if (start < 0) throw new Error(`docs/privacy.md has no section "${SECTION}"`);
  const rest = doc.slice(start + SECTION.length);
  const end = rest.indexOf('\n## ');
  const rows = (end < 0 ? rest : rest.slice(0, end)).split('\n').filter((l) => l.startsWith('|'));
  const names = new Set<string>();
  for (const row of rows.slice(2)) {
    const cell = row.split('|')[col] ?? '';
    for (const m of cell.matchAll(/`([a-z_]+)`/g)) names.add(m[1] as string);
  }
  return names;
}

const conn = mongoose.createConnection();
afterAll(async () => {
  await conn.close();
});

describe('docs/privacy.md lists every kind of record', () => {
  it('every SQLite table has a line, and every table named there exists', async () => {
    const t = await tempSqliteStore();
    let tables: string[];
    try {
      const db = new Database(t.file, { readonly: true });
      tables = (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[]
      ).map((r) => r.name);
      db.close();
    } finally {
      await t.cleanup();
    }
    const doc = listed(2);
    expect(tables.length).toBeGreaterThan(5);
    expect(tables.filter((n) => !doc.has(n)).map((n) => `${n}: a table without a line in docs/privacy.md`)).toEqual([]);
    expect([...doc].filter((n) => !tables.includes(n)).map((n) => `${n}: listed but no such table`)).toEqual([]);
  });

  it('every MongoDB collection has a line, and every collection named there exists', () => {
    const collections = Object.values(makeModels(conn)).map((m) => m.collection.collectionName);
    const doc = listed(3);
    expect(collections.length).toBeGreaterThan(5);
    expect(collections.filter((n) => !doc.has(n)).map((n) => `${n}: a collection without a line in docs/privacy.md`)).toEqual([]);
    expect([...doc].filter((n) => !collections.includes(n)).map((n) => `${n}: listed but no such collection`)).toEqual([]);
  });
});
