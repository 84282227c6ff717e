/**
 * The BullMQ column: bench/bullmq/bullmq-run.mjs as a child process on its own throwaway
 * redis-server, its jobs doing the shape of Vigil's escalation: each sends the person's two
 * texts to the same fake carrier as Vigil's runs (with Vigil embedded's in-flight cap) and
 * publishes one SOS through Socket.IO's Redis adapter to a moderator socket the harness holds
 * on the other Socket.IO server (a process of its own). BullMQ lives in the separate package
 * bench/bullmq/ (not a dependency of the service); its packages are installed with
 * `npm ci --prefix bench/bullmq` when missing.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EMBEDDED_MAX_IN_FLIGHT } from '../src/config/env.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { Carrier } from './carrier.js';
import { Moderators } from './moderator.js';
import { emptyRow, type Row } from './result.js';
import type { Workload } from './workloads.js';

const DIR = join(process.cwd(), 'bench', 'bullmq');
/** the BullMQ worker's concurrency (jobs at once); with 2 texts each, 100 sends would go out at once without the cap */
const CONCURRENCY = 50;

export function ensureBullmq(log: (line: string) => void): void {
  const deps = Object.keys((JSON.parse(readFileSync(join(DIR, 'package.json'), 'utf8')) as { dependencies: object }).dependencies);
  if (deps.every((d) => existsSync(join(DIR, 'node_modules', d, 'package.json')))) return;
  log('installing bench/bullmq/ packages (npm ci --prefix bench/bullmq)');
  const r = spawnSync('npm', ['ci', '--prefix', DIR, '--no-audit', '--no-fund'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm ci --prefix bench/bullmq failed');
}

interface BullmqResult {
  type: 'result';
  count: number;
  completed: number;
  failed: number;
  firstFailure: string | null;
  outcome: string;
  /** each person's due time, epoch ms, by index */
  dues: number[];
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  drainMs: number | null;
  peakRssMb: number;
  eldP99Ms: number;
}

/** The child's next IPC message of `type`; rejects when it exits first. */
function nextMessage<T>(child: ChildProcess, type: string, stderr: () => string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onMessage = (m: unknown) => {
      if ((m as { type?: unknown } | null)?.type !== type) return;
      off();
      resolve(m as T);
    };
    const onExit = (code: number | null) => {
      off();
      reject(new Error(`bullmq-run exited ${code} before "${type}": ${stderr()}`));
    };
    const off = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

export async function runBullmq(w: Workload): Promise<Row> {
  const row = emptyRow(w, 'bullmq');
  if (w.kind !== 'burst' && w.kind !== 'steady') throw new Error(`BullMQ has no ${w.name}`);
  const redis = await startRedis();
  const carrier = await Carrier.start();
  const moderators = new Moderators();
  let child: ChildProcess | undefined;
  try {
    const n = w.kind === 'steady' ? w.rate * w.seconds : w.count;
    const cfg = {
      ...(w.kind === 'burst' ? { kind: 'burst', count: w.count } : { kind: 'steady', rate: w.rate, seconds: w.seconds }),
      redisUrl: redis.url,
      concurrency: CONCURRENCY,
      carrier: carrier.account,
      maxInFlight: EMBEDDED_MAX_IN_FLIGHT,
    };
    const c = spawn(process.execPath, [join(DIR, 'bullmq-run.mjs'), JSON.stringify(cfg)], {
      cwd: DIR,
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    child = c;
    let stderr = '';
    c.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
    const exited = new Promise<number | null>((resolve) => c.once('exit', (code) => resolve(code)));
    const { moderatorUrl } = await nextMessage<{ moderatorUrl: string }>(c, 'listening', () => stderr);
    await moderators.connect(moderatorUrl, 'bench-moderator');
    // two contacts per person, numbered by person: phone → its person's index
    const phones = Array.from({ length: n }, (_, i) => [0, 1].map((k) => `+1556${String(i).padStart(7, '0')}${k}`));
    const owner = new Map(phones.flatMap((p, i) => p.map((to) => [to, i] as const)));
    const result = nextMessage<BullmqResult>(c, 'result', () => stderr);
    c.send({ type: 'start', phones });
    const a = await result;
    // as for Vigil: the texts, then every SOS on the moderator socket (the jobs have answered, so they are in)
    const expectedSms = 2 * n;
    await carrier.waitFor(expectedSms, row, 10_000);
    if (w.kind === 'burst' && w.sms) row.smsExpected = expectedSms;
    await moderators.waitFor(n, Date.now() + 30_000);
    c.send({ type: 'stop' });
    const code = await exited;
    if (code !== 0) throw new Error(`bullmq-run exited ${code}: ${stderr}`);

    row.count = a.count;
    row.completed = a.completed;
    row.p50Ms = a.p50Ms ?? undefined;
    row.p99Ms = a.p99Ms ?? undefined;
    row.maxMs = a.maxMs ?? undefined;
    row.drainMs = a.drainMs ?? undefined;
    row.peakRssMb = a.peakRssMb;
    row.eldP99Ms = a.eldP99Ms;
    moderators.figures(row, n);
    const lastDue = a.dues.reduce((x, y) => Math.max(x, y), -Infinity);
    carrier.figures(
      row,
      expectedSms,
      (to) => {
        const i = owner.get(to);
        return i === undefined ? undefined : a.dues[i];
      },
      lastDue,
    );
    if (a.failed) row.notes.push(`${a.failed} jobs failed (${a.firstFailure ?? '?'})`);
    if (a.outcome !== 'done') row.notes.push(`gave up waiting for jobs (${a.outcome})`);
    row.notes.push(
      `concurrency ${CONCURRENCY}, ≤ ${EMBEDDED_MAX_IN_FLIGHT} sends in flight; moderator on the other Socket.IO process; RSS, loop: BullMQ worker process (not Redis, not that one)`,
    );
  } catch (err) {
    row.error = err instanceof Error ? err.message.split('\n')[0] : String(err);
  } finally {
    moderators.close();
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await carrier.close();
    await redis.stop();
  }
  return row;
}
