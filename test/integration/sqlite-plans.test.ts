/**
 * The claim statements stay O(batch), not O(backlog): each is `UPDATE … WHERE key IN
 * (SELECT … LIMIT n) AND <re-check>`, and SQLite must find the rows of the outer UPDATE by
 * their primary key. When the re-check could use the status index instead, the planner
 * took it and every claim walked the whole due backlog (a 20,000-delivery burst made each
 * of its ~1,000 claims read 20,000 rows): the unary `+` in the re-checks keeps it off.
 * Guarded here with EXPLAIN QUERY PLAN on a real database file.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERIES_SQL } from '../../src/store/sqlite/deliveries-statements.js';
import { REPLIES_SQL } from '../../src/store/sqlite/replies-statements.js';
import { SAFETY_SQL } from '../../src/store/sqlite/safety-statements.js';
import { TIMERS_SQL } from '../../src/store/sqlite/timers-statements.js';
import { tempSqliteStore, type TempSqliteStore } from '../helpers/sqlite-store.js';

let tmp: TempSqliteStore | undefined;
let db: Database.Database;

beforeAll(async () => {
  tmp = await tempSqliteStore();
  await tmp.store.close(); // the migrations, as the service runs them
  db = new Database(tmp.file, { readonly: true });
  db.function('store_now', () => 0);
});
afterAll(async () => {
  db?.close();
  await tmp?.cleanup();
});

/** The plan's top-level steps (the outer statement's own table access), as SQLite prints them. */
function outerSteps(sql: string): string[] {
  const params = Object.fromEntries([...sql.matchAll(/@(\w+)/g)].map((m) => [m[1], 1]));
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { id: number; parent: number; detail: string }[];
  return plan.filter((r) => r.parent === 0).map((r) => r.detail);
}

const claims: Record<string, [sql: string, table: string, pk: string]> = {
  'deliveries claim (dispatcher)': [DELIVERIES_SQL.deliveriesClaim, 'deliveries', 'key=?'],
  'due timers claim (sweep)': [TIMERS_SQL.timersClaimDue, 'timers', 'id=?'],
  'warning claim (sweep)': [SAFETY_SQL.timersClaimWarning, 'timers', 'id=?'],
};

describe('SQLite claim statements read O(batch) rows, not the whole backlog', () => {
  for (const [name, [sql, table, pk]] of Object.entries(claims)) {
    it(`${name}: the outer UPDATE finds its rows by primary key`, () => {
      const steps = outerSteps(sql);
      const access = steps.filter((d) => d.includes(` ${table} `) || d.endsWith(` ${table}`));
      expect(access, steps.join(' | ')).toHaveLength(1);
      expect(access[0]).toMatch(
        new RegExp(`^SEARCH ${table} USING (INTEGER PRIMARY KEY|INDEX sqlite_autoindex_${table}_1) \\(${pk.replace('?', '\\?')}\\)$`),
      );
      expect(steps.join(' | ')).not.toMatch(/MULTI-INDEX OR/);
    });
  }
});

describe('a reply finds its contacts by number through an index, never a scan', () => {
  it('contactsWithPhone searches contacts_phone', () => {
    const steps = db
      .prepare(`EXPLAIN QUERY PLAN ${REPLIES_SQL.contactsWithPhone}`)
      .all('+14155550100')
      .map((r) => (r as { detail: string }).detail);
    expect(steps.join(' | ')).toMatch(/^SEARCH contacts USING INDEX contacts_phone \(phone=\?\)/);
  });
  it('the acknowledgement finds its incident by primary key', () => {
    const steps = outerSteps(REPLIES_SQL.incidentAddContactAck);
    expect(steps.filter((d) => / incidents\b/.test(d))[0]).toMatch(
      /^SEARCH incidents USING INDEX sqlite_autoindex_incidents_1 \(id=\?\)$|^SEARCH incidents USING INTEGER PRIMARY KEY/,
    );
  });
});
