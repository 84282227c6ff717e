/**
 * Benchmark: the SQLite store alone, the escalation's writes and nothing else: `n` due timers
 * written straight into a migrated file, then claimed 100 at a time and escalated in group
 * commits of 50 (one incident and two SOS deliveries each), as the sweep does. Prints wall and
 * CPU time; asserts nothing. CPU time barely moves on a busy machine, so run it before and
 * after a change to the store's statements (it found one that doubled a burst's writes).
 *   npx tsx bench/store.ts [timers=10000]
 */
import Database from 'better-sqlite3';
import { sweepSlot } from '../src/domain/sweep-shard.js';
import type { Timer } from '../src/domain/timer.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { tempSqliteFile } from '../test/helpers/sqlite-store.js';

const n = Number(process.argv[2] ?? 10_000);
const CLAIM = 100;
const GROUP = 50;
const BODY = 'SOS: Bench has not checked in from Bench café. Last known location https://maps.example/?q=0,0 at 21:00 UTC.';

const tmp = tempSqliteFile();
try {
  await (await SqliteStore.open({ file: tmp.file })).close(); // migrations
  const db = new Database(tmp.file);
  const now = Date.now();
  const insert = db.prepare(
    `INSERT INTO timers (id, user_id, status, started_at, expires_at, updated_at, location_name, display_name, extensions, escalation, sweep_slot)
     VALUES (?, ?, 'active', ?, ?, ?, 'Bench café', 'Bench', 0, 'none', ?)`,
  );
  db.transaction(() => {
    for (let i = 0; i < n; i++) insert.run(`t-${i}`, `u-${i}`, now - 60_000, now - 1000 + (i % 1000), now, sweepSlot(`t-${i}`));
  })();
  db.close();

  const store = await SqliteStore.open({ file: tmp.file });
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  let fence = 1;
  let escalated = 0;
  for (;;) {
    const timers: Timer[] = await store.claimDueTimers(CLAIM, fence++);
    if (timers.length === 0) break;
    for (let i = 0; i < timers.length; i += GROUP) {
      const items = timers.slice(i, i + GROUP).map((timer) => ({
        timer,
        fence,
        incidentId: `inc-${timer.id}`,
        recipients: [1, 2].map((k) => ({
          contactId: `c${k}-${timer.userId}`,
          contactName: `Contact ${k}`,
          phone: `+1555000000${k}`,
          body: BODY,
        })),
      }));
      escalated += (await store.escalateBatch(items)).length;
    }
  }
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(
    `${escalated} timers claimed and escalated: wall ${(performance.now() - wall0).toFixed(0)} ms, ` +
      `CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms (${((cpu.user + cpu.system) / escalated).toFixed(0)} µs per timer)\n`,
  );
  await store.close();
} finally {
  tmp.cleanup();
}
