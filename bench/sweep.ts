/**
 * Benchmark: how fast one sweeper escalates a backlog of due timers on the embedded
 * SQLite store, how fast the dispatcher then hands the texts to a fake carrier, and how
 * long the event loop was blocked meanwhile. Prints figures; asserts nothing.
 *   npx tsx bench/sweep.ts [timers=5000] [contactsPerUser=2] [carrierLatencyMs=50] [full|normal (SQLITE_SYNCHRONOUS)] [groupSize=25] [batchSize=100]
 * The dispatcher runs as the scheduler drives it: a tick every second (the cron heartbeat)
 * plus whatever it starts on its own; 64 sends in flight (the default). The sweeper, escalator
 * and dispatcher are wired as the service wires them (`buildWorkers`).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pino } from 'pino';
import { SmsBudget } from '../src/app/sms-budget.js';
import { buildWorkers } from '../src/compose/workers.js';
import type { AttemptResult } from '../src/domain/delivery.js';
import { InProcessLock } from '../src/lock/in-process-lock.js';
import { createMetrics } from '../src/metrics.js';
import type { Carrier, OutgoingSms } from '../src/sms/port.js';
import { tempSqliteStore } from '../test/helpers/sqlite-store.js';

const n = Number(process.argv[2] ?? 5000);
const contacts = Number(process.argv[3] ?? 2);
const latencyMs = Number(process.argv[4] ?? 50);
const synchronous = process.argv[5] === 'normal' ? 'normal' : 'full';
const groupSize = Number(process.argv[6] ?? 25);
const batchSize = Number(process.argv[7] ?? 100);

class FakeCarrier implements Carrier {
  readonly name = 'fake';
  sent = 0;
  async send(sms: OutgoingSms): Promise<AttemptResult> {
    await new Promise((r) => setTimeout(r, latencyMs));
    this.sent++;
    return { ok: true, carrier: this.name, providerMessageId: `fake:${sms.idempotencyKey}` };
  }
}

const ms = (ns: number) => (ns / 1e6).toFixed(1);
function loopFigures(h: ReturnType<typeof monitorEventLoopDelay>): string {
  return `event-loop delay p50 ${ms(h.percentile(50))} ms, p99 ${ms(h.percentile(99))} ms, max ${ms(h.max)} ms`;
}

const { store, cleanup } = await tempSqliteStore({ synchronous });
try {
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
  const carrier = new FakeCarrier();
  const { sweeper, dispatcher } = buildWorkers(
    {
      store,
      lock: new InProcessLock(),
      carrier,
      metrics,
      log,
      events: { publish() {} },
      smsBudget: new SmsBudget(store, { maxPerIncident: 12, maxPerUserPerDay: 60 }, { log }),
    },
    {
      // as the composition root configures the embedded store
      sweep: { lockName: 'bench', lockTtlMs: 60_000, batchSize, groupSize, concurrency: 1, maxEscalationAttempts: 5 },
      dispatch: { maxInFlight: 64, leaseMs: 30_000, retry: { maxAttempts: 6, baseMs: 2000, capMs: 300_000 } },
    },
  );
  const loop = monitorEventLoopDelay({ resolution: 1 });
  const rss0 = process.memoryUsage().rss;
  loop.enable();
  t0 = performance.now();
  const report = await sweeper.sweep();
  const sweepMs = performance.now() - t0;
  loop.disable();
  const rss1 = process.memoryUsage().rss;
  const overdue = await store.overdue();
  console.log(
    `timers=${n} contacts/user=${contacts} carrier latency=${latencyMs} ms synchronous=${synchronous} claim batch=${batchSize} group=${groupSize}`,
  );
  console.log(`arm (one by one):       ${armMs.toFixed(0)} ms  (${((n / armMs) * 1000).toFixed(0)} timers/s)`);
  console.log(
    `sweep (claim+escalate): ${sweepMs.toFixed(0)} ms  (${((report.escalated / sweepMs) * 1000).toFixed(0)} escalations/s), claimed=${report.claimed} escalated=${report.escalated} failed=${report.failed}`,
  );
  console.log(`  during the sweep: ${loopFigures(loop)}`);
  console.log(`rss before/after sweep: ${(rss0 / 2 ** 20).toFixed(1)} / ${(rss1 / 2 ** 20).toFixed(1)} MiB; overdue left=${overdue.count}`);

  const total = (await store.deliveryBacklog()).pending;
  loop.reset();
  loop.enable();
  t0 = performance.now();
  // the scheduler's shape: a tick right after the sweep, then one per second
  await dispatcher.tick();
  const heartbeat = setInterval(() => void dispatcher.tick(), 1000);
  while (carrier.sent < total) await new Promise((r) => setTimeout(r, 20));
  clearInterval(heartbeat);
  await dispatcher.stop();
  const drainMs = performance.now() - t0;
  loop.disable();
  const left = (await store.deliveryBacklog()).pending;
  console.log(
    `dispatch drain:         ${drainMs.toFixed(0)} ms  (${((total / drainMs) * 1000).toFixed(0)} deliveries/s), deliveries=${total} recorded-open-left=${left}`,
  );
  console.log(`  during the drain: ${loopFigures(loop)}`);
} finally {
  await cleanup();
}
