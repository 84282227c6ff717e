/**
 * BullMQ side of `npm run bench`: the same timing workloads as delayed jobs. Adds N delayed
 * jobs due at the workload's deadlines, a Worker (concurrency 50) completes them, and the
 * lateness of each job is its completion (the worker's `completed` event, after BullMQ has
 * moved it to completed in Redis) − its due time. Prints one JSON line.
 *
 *   node bench/bullmq/bullmq-run.mjs '{"redisUrl":"redis://127.0.0.1:6390","kind":"burst","count":1000}'
 *   node bench/bullmq/bullmq-run.mjs '{"redisUrl":"…","kind":"steady","rate":200,"seconds":20}'
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';

const cfg = JSON.parse(process.argv[2] ?? '{}');
const url = new URL(cfg.redisUrl);
const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
const concurrency = cfg.concurrency ?? 50;
const n = cfg.kind === 'steady' ? cfg.rate * cfg.seconds : cfg.count;

const queue = new Queue('bench', { connection });
const late = [];
let lastCompleted = 0;
let resolveDone;
const done = new Promise((resolve) => (resolveDone = resolve));
const worker = new Worker('bench', async () => {}, { connection, concurrency });
worker.on('completed', (job) => {
  const now = Date.now();
  late.push(now - job.data.due);
  lastCompleted = Math.max(lastCompleted, now);
  if (late.length >= n) resolveDone();
});
await worker.waitUntilReady();

// deadlines: a burst spreads over one second (as Vigil's whole-second durations do), steady is evenly paced
const t0 = Date.now() + 3000 + n * 0.3;
const dues = Array.from({ length: n }, (_, i) => (cfg.kind === 'steady' ? t0 + (i * 1000) / cfg.rate : t0 + (i / n) * 1000));
for (let i = 0; i < n; i += 500) {
  const now = Date.now();
  await queue.addBulk(
    dues.slice(i, i + 500).map((due) => ({
      name: 'timer',
      data: { due },
      opts: { delay: Math.max(0, due - now), removeOnComplete: true, removeOnFail: true },
    })),
  );
}
const lastDue = dues[dues.length - 1];
await sleep(Math.max(0, t0 - 1000 - Date.now()));
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
const timeout = sleep(Math.max(0, lastDue - Date.now()) + Math.max(60_000, n * 20)).then(() => 'timeout');
const outcome = await Promise.race([done.then(() => 'done'), timeout]);
loop.disable();

late.sort((a, b) => a - b);
const pct = (p) => (late.length ? late[Math.min(late.length, Math.max(1, Math.ceil((p / 100) * late.length))) - 1] : null);
process.stdout.write(
  `${JSON.stringify({
    count: n,
    completed: late.length,
    outcome,
    p50Ms: pct(50),
    p99Ms: pct(99),
    maxMs: late.length ? late[late.length - 1] : null,
    drainMs: lastCompleted ? lastCompleted - lastDue : null,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    eldP99Ms: loop.percentile(99) / 1e6,
  })}\n`,
);
await worker.close(true);
await queue.close();
process.exit(0);
