/**
 * `npm run bench`: Vigil (embedded, 3 replicas on a shared SQLite file) and BullMQ delayed
 * jobs side by side on the workloads of the performance goals; prints one table and
 * optionally writes JSON. Prints figures; asserts nothing (see docs/performance.md).
 *   npm run bench -- --quick                       # smoke run at small sizes (a few minutes)
 *   npm run bench -- --workloads burst1k --systems embedded --env SWEEP_CRON='*\/5 * * * * *'
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBullmq, runBullmq } from './bullmq.js';
import { parseOptions, type SystemName } from './options.js';
import { smsRow, table, type Row } from './result.js';
import { runRss } from './run-rss.js';
import { runVigilTiming, type RunContext } from './run-vigil.js';
import { bullmqRuns, describe, workload, type Workload } from './workloads.js';

const options = parseOptions(process.argv.slice(2), process.env);
const log = (line: string) => process.stderr.write(`${line}\n`);
const root = mkdtempSync(join(tmpdir(), 'vigil-bench-'));
const ctx: RunContext = { options, root, log };

async function run(w: Workload, system: SystemName): Promise<Row | undefined> {
  if (system === 'bullmq') return bullmqRuns(w) ? runBullmq(w) : undefined;
  return w.kind === 'rss' ? runRss(w, system, ctx) : runVigilTiming(w, system, ctx);
}

const started = Date.now();
// figures from a busy machine mean little: the load average is printed with them
const loadBefore = loadavg()[0] ?? 0;
const rows: Row[] = [];
try {
  if (options.systems.includes('bullmq')) ensureBullmq(log);
  for (const name of options.workloads) {
    const w = workload(name, options);
    for (const system of options.systems) {
      if (system === 'bullmq' && !bullmqRuns(w)) continue;
      log(`${describe(w)} · ${system}`);
      const t = Date.now();
      const row = await run(w, system);
      if (!row) continue;
      rows.push(row);
      log(`  done in ${((Date.now() - t) / 1000).toFixed(0)} s${row.error ? ` — error: ${row.error}` : ''}`);
    }
  }
} finally {
  if (!options.keep) rmSync(root, { recursive: true, force: true });
  else log(`run folders kept in ${root}`);
}

const sms = rows.filter((r) => r.workload === 'burst10k').map(smsRow);
const all = [...rows, ...sms.filter((r): r is Row => r !== undefined)];
const header =
  `Vigil benchmark${options.quick ? ' (QUICK: small sizes, not the goal sizes)' : ''} · ${new Date(started).toISOString()} · ` +
  `${cpus().length} cores · load ${loadBefore.toFixed(1)} → ${(loadavg()[0] ?? 0).toFixed(1)} · node ${process.version}` +
  (Object.keys(options.vigilEnv).length ? ` · env ${JSON.stringify(options.vigilEnv)}` : '');
process.stdout.write(
  `\n${header}\nlateness = incident committed − deadline (BullMQ: job completed, after its texts were answered, − due)\n\n${table(all)}\n`,
);
if (options.json) {
  writeFileSync(
    options.json,
    `${JSON.stringify({ startedAt: new Date(started).toISOString(), load: [loadBefore, loadavg()[0]], options, rows: all }, null, 2)}\n`,
  );
  log(`wrote ${options.json}`);
}
