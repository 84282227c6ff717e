/**
 * Benchmark: how fast one sweeper escalates a backlog of due timers on the embedded
 * SQLite store, and the memory it takes. Prints figures; asserts nothing.
 *   npx tsx scripts/bench-sweep.ts [timers=5000] [contactsPerUser=2]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { InProcessLock } from '../src/lock/in-process-lock.js';
import { createMetrics } from '../src/metrics.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { Escalator } from '../src/worker/escalator.js';
import { Sweeper } from '../src/worker/sweeper.js';
import { SmsBudget } from '../src/app/sms-budget.js';

const n = Number(process.argv[2] ?? 5000);
const contacts = Number(process.argv[3] ?? 2);
const dir = mkdtempSync(join(tmpdir(), 'vigil-bench-'));
try {
  const store = await SqliteStore.open({ file: join(dir, 'vigil.db') });
  const now = await store.now();
  let t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const userId = `u${i}`;
    await store.replaceContacts(
      userId,
      Array.from({ length: contacts }, (_, c) => ({ id: `c${i}-${c}`, name: `C${c}`, phone: `+1415555${String(c).padStart(4, '0')}` })),
    );
    await store.armTimer({
      id: `t${i}`,
      userId,
      startedAt: new Date(now.getTime() - 120_000),
      expiresAt: new Date(now.getTime() - 1000 + (i % 1000)),
    });
  }
  const armMs = performance.now() - t0;
  const log = pino({ level: 'silent' });
  const metrics = createMetrics({ replica: 'bench', collectDefault: false });
  const sweeper = new Sweeper(
    store,
    new InProcessLock(),
    new Escalator(store, { publish() {} }, metrics, log, new SmsBudget(store, { maxPerIncident: 12, maxPerUserPerDay: 60 }, { log })),
    metrics,
    log,
    {
      lockName: 'bench',
      lockTtlMs: 60_000,
      batchSize: 500,
      concurrency: 16,
      maxEscalationAttempts: 5,
    },
  );
  const rss0 = process.memoryUsage().rss;
  t0 = performance.now();
  const report = await sweeper.sweep();
  const sweepMs = performance.now() - t0;
  const rss1 = process.memoryUsage().rss;
  const overdue = await store.overdue();
  console.log(`timers=${n} contacts/user=${contacts}`);
  console.log(`arm (one by one):     ${armMs.toFixed(0)} ms  (${((n / armMs) * 1000).toFixed(0)} timers/s)`);
  console.log(
    `sweep (claim+escalate): ${sweepMs.toFixed(0)} ms  (${((report.escalated / sweepMs) * 1000).toFixed(0)} escalations/s), claimed=${report.claimed} escalated=${report.escalated} failed=${report.failed}`,
  );
  console.log(`rss before/after sweep: ${(rss0 / 2 ** 20).toFixed(1)} / ${(rss1 / 2 ** 20).toFixed(1)} MiB; overdue left=${overdue.count}`);
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
