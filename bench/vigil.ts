/**
 * Vigil as the benchmark runs it: real processes from dist/main.js. Embedded is one process
 * on a fresh DATA_DIR; `replicas3` is three processes sharing that SQLite file, with a
 * throwaway redis-server for the sweep lock and Socket.IO. Every setting not given here is
 * the service's default, so the figures are those of a plain deployment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { signToken } from '../src/auth/tokens.js';
import { freePort } from '../test/helpers/net.js';
import { startRedis, type RedisServer } from '../test/helpers/redis-server.js';
import { eventLoopP99Ms } from './measure.js';
import { procCpuMs, procMemory } from './rss.js';

const MAIN = join(process.cwd(), 'dist', 'main.js');
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

export interface VigilOptions {
  replicas: number;
  dataDir: string;
  /** LOG_LEVEL; stdout of replica i goes to <dataDir>/r<i+1>.log */
  logLevel: string;
  /** the carrier and any extra settings (`--env`), the same for every replica */
  env: Record<string, string>;
}

export interface Vigil {
  readonly urls: string[];
  readonly sqliteFile: string;
  token(sub: string, admin?: boolean): string;
  /** the highest VmHWM among the replicas, MB (read while they run) */
  peakRssMb(): number | undefined;
  /** CPU time (user + system) all replicas have used since they started, ms: robust to a busy machine, unlike wall time */
  cpuMs(): number;
  /** the highest current VmRSS among the replicas, MB */
  rssMb(): number | undefined;
  /** scrape every replica's /metrics; the highest event-loop delay p99 since the last scrape, ms */
  scrapeEventLoop(): Promise<number | undefined>;
  /** SIGTERM every replica (SIGKILL after a timeout) and the Redis, if any. Safe to call twice. */
  stop(): Promise<void>;
}

interface Proc {
  child: ChildProcess;
  exited: Promise<void>;
  stderr: string;
}

export async function startVigil(o: VigilOptions): Promise<Vigil> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: \`npm run bench\` builds first`);
  const jwtSecret = randomBytes(32).toString('hex');
  let redis: RedisServer | undefined;
  const procs: Proc[] = [];
  const urls: string[] = [];
  const stop = async () => {
    await Promise.all(procs.splice(0).map((p) => stopProc(p)));
    await redis?.stop();
  };
  try {
    if (o.replicas > 1) redis = await startRedis();
    const base: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      DATA_DIR: o.dataDir,
      JWT_SECRET: jwtSecret,
      // every replica and every start on this folder derives the same contact ids (required with REDIS_URL)
      CONTACT_ID_KEY: contactIdKey(o.dataDir),
      LOG_LEVEL: o.logLevel,
      // the workloads arm timers a few seconds ahead
      TIMER_MIN_SECONDS: '1',
      ...(redis ? { REDIS_URL: redis.url } : {}),
      ...o.env,
    };
    for (let i = 0; i < o.replicas; i++) {
      const port = await freePort();
      const env = { ...base, PORT: String(port), REPLICA_ID: `r${i + 1}` };
      procs.push(spawnReplica(env, join(o.dataDir, `r${i + 1}.log`)));
      urls.push(`http://127.0.0.1:${port}`);
      // the first alone: it creates the SQLite file and runs the migrations
      if (i === 0) await waitReady(urls[0]!, procs[0]!);
    }
    await Promise.all(urls.map((u, i) => waitReady(u, procs[i]!)));
  } catch (err) {
    await stop();
    throw err;
  }
  const pids = procs.map((p) => p.child.pid).filter((p): p is number => p !== undefined);
  const maxOf = (pick: (m: { hwmKb: number; rssKb: number }) => number) => {
    const kb = pids.map((pid) => procMemory(pid)).map((m) => (m ? pick(m) : 0));
    const top = Math.max(0, ...kb);
    return top > 0 ? top / 1024 : undefined;
  };
  return {
    urls,
    sqliteFile: join(o.dataDir, 'vigil.db'),
    token: (sub, admin = false) => signToken(jwtSecret, { sub, admin, name: `Bench ${sub}` }, 24 * 3600),
    peakRssMb: () => maxOf((m) => m.hwmKb),
    rssMb: () => maxOf((m) => m.rssKb),
    cpuMs: () => pids.reduce((sum, pid) => sum + (procCpuMs(pid) ?? 0), 0),
    async scrapeEventLoop() {
      const texts = await Promise.all(
        urls.map((u) =>
          fetch(`${u}/metrics`, { signal: AbortSignal.timeout(10_000) })
            .then((r) => r.text())
            .catch(() => ''),
        ),
      );
      const values = texts.map(eventLoopP99Ms).filter((v): v is number => v !== undefined);
      return values.length ? Math.max(...values) : undefined;
    },
    stop,
  };
}

/** The folder's contact id key: the one the service keeps there (DATA_DIR/contact-id-key), made once. */
function contactIdKey(dataDir: string): string {
  const file = join(dataDir, 'contact-id-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = randomBytes(32).toString('hex');
  writeFileSync(file, key, { mode: 0o600 });
  return key;
}

function spawnReplica(env: Record<string, string>, logFile: string): Proc {
  const out = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    // BENCH_NODE_ARGS: extra node flags for every replica (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof)
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
    child = spawn(process.execPath, [...nodeArgs, MAIN], { env, stdio: ['ignore', out, 'pipe'] });
  } finally {
    closeSync(out);
  }
  const p: Proc = { child, stderr: '', exited: new Promise((resolve) => child.once('exit', () => resolve())) };
  child.stderr?.on('data', (c: Buffer) => {
    p.stderr = (p.stderr + c.toString('utf8')).slice(-4000);
  });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  void p.exited.then(() => process.off('exit', kill));
  return p;
}

async function waitReady(url: string, p: Proc): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (p.child.exitCode !== null || p.child.signalCode !== null)
      throw new Error(`vigil at ${url} exited before it was ready:\n${p.stderr}`);
    const ok = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`vigil at ${url} not ready within ${READY_TIMEOUT_MS} ms:\n${p.stderr}`);
    await sleep(50);
  }
}

async function stopProc(p: Proc): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const t = setTimeout(() => p.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  try {
    await p.exited;
  } finally {
    clearTimeout(t);
  }
}
