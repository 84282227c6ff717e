/**
 * The BullMQ column: bench/bullmq/bullmq-run.mjs as a child process on its own throwaway
 * redis-server. BullMQ lives in the separate package bench/bullmq/ (not a dependency of the
 * service); its packages are installed with `npm ci --prefix bench/bullmq` when missing.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis } from '../test/helpers/redis-server.js';
import { emptyRow, type Row } from './result.js';
import type { Workload } from './workloads.js';

const DIR = join(process.cwd(), 'bench', 'bullmq');

export function ensureBullmq(log: (line: string) => void): void {
  if (existsSync(join(DIR, 'node_modules', 'bullmq', 'package.json'))) return;
  log('installing bench/bullmq/ packages (npm ci --prefix bench/bullmq)');
  const r = spawnSync('npm', ['ci', '--prefix', DIR, '--no-audit', '--no-fund'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm ci --prefix bench/bullmq failed');
}

interface BullmqAnswer {
  count: number;
  completed: number;
  outcome: string;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  drainMs: number | null;
  peakRssMb: number;
  eldP99Ms: number;
}

export async function runBullmq(w: Workload): Promise<Row> {
  const row = emptyRow(w, 'bullmq');
  if (w.kind !== 'burst' && w.kind !== 'steady') throw new Error(`BullMQ has no ${w.name}`);
  const redis = await startRedis();
  try {
    const cfg = w.kind === 'burst' ? { kind: 'burst', count: w.count } : { kind: 'steady', rate: w.rate, seconds: w.seconds };
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, [join(DIR, 'bullmq-run.mjs'), JSON.stringify({ ...cfg, redisUrl: redis.url })], {
        cwd: DIR,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-4000)));
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`bullmq-run exited ${code}: ${stderr}`))));
    });
    const a = JSON.parse(out.trim().split('\n').pop() ?? '{}') as BullmqAnswer;
    row.count = a.count;
    row.completed = a.completed;
    row.p50Ms = a.p50Ms ?? undefined;
    row.p99Ms = a.p99Ms ?? undefined;
    row.maxMs = a.maxMs ?? undefined;
    row.drainMs = a.drainMs ?? undefined;
    row.peakRssMb = a.peakRssMb;
    row.eldP99Ms = a.eldP99Ms;
    row.notes.push('concurrency 50; RSS, loop: BullMQ process (not Redis)');
  } catch (err) {
    row.error = err instanceof Error ? err.message.split('\n')[0] : String(err);
  } finally {
    await redis.stop();
  }
  return row;
}
