/**
 * RSS with many armed timers vs few: timers live in the store, so the service's memory must
 * not grow with them. For each size: start Vigil on a fresh DATA_DIR (migrations), stop it,
 * write the timers straight into the SQLite file, start it again, let it sweep a few times
 * (and answer /metrics, whose gauges count timers), then read its resident set.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { emptyRow, judge, type Row } from './result.js';
import { insertArmedTimers } from './rss.js';
import type { RunContext } from './run-vigil.js';
import { startVigil } from './vigil.js';
import type { Workload } from './workloads.js';

const SETTLE_MS = 6000;

async function measure(size: number, system: 'embedded' | 'replicas3', ctx: RunContext): Promise<{ rssMb: number; peakMb: number }> {
  const dataDir = mkdtempSync(join(ctx.root, `rss-${size}-${system}-`));
  const opts = { replicas: system === 'replicas3' ? 3 : 1, dataDir, logLevel: ctx.options.logLevel, env: { ...ctx.options.vigilEnv } };
  try {
    await (await startVigil({ ...opts, replicas: 1 })).stop();
    const t = performance.now();
    insertArmedTimers(join(dataDir, 'vigil.db'), size);
    ctx.log(`  ${size.toLocaleString('en-US')} timers written in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const vigil = await startVigil(opts);
    try {
      await sleep(SETTLE_MS / 2);
      await vigil.scrapeEventLoop();
      await sleep(SETTLE_MS / 2);
      return { rssMb: vigil.rssMb() ?? NaN, peakMb: vigil.peakRssMb() ?? NaN };
    } finally {
      await vigil.stop();
    }
  } finally {
    if (!ctx.options.keep) rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function runRss(w: Workload, system: 'embedded' | 'replicas3', ctx: RunContext): Promise<Row> {
  if (w.kind !== 'rss') throw new Error(`${w.name} is not an RSS workload`);
  const row = emptyRow(w, system);
  row.count = 2;
  try {
    const small = await measure(w.small, system, ctx);
    const big = await measure(w.big, system, ctx);
    row.completed = 2;
    row.peakRssMb = big.peakMb;
    const ratio = big.peakMb / small.peakMb;
    row.notes.push(
      `${w.small.toLocaleString('en-US')} armed: ${small.rssMb.toFixed(0)} MB now, ${small.peakMb.toFixed(0)} MB peak; ` +
        `${w.big.toLocaleString('en-US')} armed: ${big.rssMb.toFixed(0)} MB now, ${big.peakMb.toFixed(0)} MB peak (×${ratio.toFixed(2)})`,
    );
    judge(w, row, { rssRatio: ratio });
  } catch (err) {
    row.error = err instanceof Error ? err.message.split('\n')[0] : String(err);
    judge(w, row);
  }
  return row;
}
