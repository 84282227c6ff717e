/**
 * A real cluster for tests: N child processes of the built server (`node dist/main.js`),
 * each on its own loopback port, sharing one DATA_DIR (the SQLite file, WAL), one
 * Redis and one JWT secret. Every stdout line is kept, parsed (pino JSON), per replica,
 * across restarts. stdout goes to a file in DATA_DIR, not a pipe: a write to a full pipe
 * (a busy test process reads it late) is queued inside the replica and lost when the
 * replica is killed with SIGKILL, while a file write is done when it returns. Processes are stopped by `stopAll()` and, should the test process die
 * first, killed by a process `exit` hook: nothing is left running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { signToken } from '../../src/auth/tokens.js';
import { GENEROUS_LIMITS } from './limits.js';
import type { SweepReport } from '../../src/worker/sweeper.js';
import { requestJson, type ApiAnswer } from './http.js';
import { withinMs } from './deadline.js';
import { freePort } from './net.js';

const ROOT = process.cwd();
const MAIN = join(ROOT, 'dist', 'main.js');
const READY_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 8_000;
/** how long kill() waits for the exit its SIGKILL or SIGTERM should cause */
const KILL_WAIT_MS = 60_000;

/** One stdout line of a replica: the pino object, plus when the test process read it. */
export interface LogLine {
  level?: number;
  time?: string;
  msg?: string;
  replica?: string;
  /** Date.now() in the test process when the line was read */
  readAt: number;
  /** set when the line was not JSON */
  raw?: string;
  [key: string]: unknown;
}

/** A `msg: "sweep"` line: the sweeper's report, its window in epoch ms, and who swept. */
export type SweepLine = SweepReport & { replica: string; startedAt: number; endedAt: number };

export interface ClusterOptions {
  /** default 3 */
  replicas?: number;
  /** unset → embedded lock (no Redis), which makes every replica sweep */
  redisUrl?: string;
  /** shared by every replica (the SQLite file lives here) */
  dataDir: string;
  /** default: 32 random bytes, hex */
  jwtSecret?: string;
  /** extra environment: the same for every replica, or per replica (index 0 is r1) */
  env?: Record<string, string> | ((index: number) => Record<string, string>);
}

export interface Cluster {
  readonly size: number;
  readonly jwtSecret: string;
  /** `http://127.0.0.1:<port>` of replica i (0-based; replica 0 is REPLICA_ID r1) */
  url(i: number): string;
  /** REPLICA_ID of replica i */
  id(i: number): string;
  /** index of the replica with this REPLICA_ID */
  indexOf(replicaId: string): number;
  pid(i: number): number | undefined;
  running(i: number): boolean;
  /** how the last life of replica i ended, once it has */
  lastExit(i: number): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  token(sub: string, o?: { admin?: boolean; name?: string }): string;
  /** Send a signal. SIGKILL/SIGTERM wait for the exit; SIGSTOP/SIGCONT return at once. */
  kill(i: number, signal: NodeJS.Signals): Promise<void>;
  /** Stop (if running) and start again with the same settings, on the same port when it is still free. */
  restart(i: number): Promise<void>;
  /** every stdout line of replica i since the cluster started (all its lives) */
  logs(i: number): LogLine[];
  /** the `msg: "sweep"` lines of replica i */
  sweeps(i: number): SweepLine[];
  /** stderr of replica i (all its lives), for failure messages */
  stderr(i: number): string;
  api(i: number, token: string, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiAnswer>;
  /** the Prometheus text of replica i */
  metrics(i: number): Promise<string>;
  /** SIGCONT + SIGTERM to every replica, SIGKILL to what has not exited after a timeout. Safe to call twice. */
  stopAll(): Promise<void>;
}

interface Replica {
  index: number;
  id: string;
  port: number;
  env: Record<string, string>;
  child?: ChildProcess;
  exited?: Promise<void>;
  /** the replica's stdout, appended to by all its lives; read up to `logRead` bytes so far */
  logFile: string;
  logRead: number;
  /** bytes after the last newline read so far (a line still being written) */
  logPartial: Buffer;
  lines: LogLine[];
  stderr: string;
  lastExit?: { code: number | null; signal: NodeJS.Signals | null };
}

/** Fails with a clear message when the server was not built. */
export function assertBuilt(): void {
  if (!existsSync(MAIN)) {
    throw new Error(`${MAIN} is missing: run \`npm run build\` first (\`npm test\` builds before vitest)`);
  }
}

function keptContactIdKey(dataDir: string): string {
  const file = join(dataDir, 'contact-id-key');
  mkdirSync(dataDir, { recursive: true });
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

export async function startCluster(o: ClusterOptions): Promise<Cluster> {
  assertBuilt();
  const size = o.replicas ?? 3;
  const jwtSecret = o.jwtSecret ?? randomBytes(32).toString('hex');
  // kept with the data: a cluster started again on the same DATA_DIR derives the same contact ids
  const contactIdKey = keptContactIdKey(o.dataDir);
  const replicas: Replica[] = [];
  for (let i = 0; i < size; i++) {
    const extra = typeof o.env === 'function' ? o.env(i) : (o.env ?? {});
    const id = extra.REPLICA_ID ?? `r${i + 1}`;
    const env: Record<string, string> = {
      // a clean environment: nothing of the test runner's own configuration leaks in
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      DATA_DIR: o.dataDir,
      JWT_SECRET: jwtSecret,
      // every replica derives the same contact ids
      CONTACT_ID_KEY: contactIdKey,
      REPLICA_ID: id,
      LOG_LEVEL: 'debug',
      TIMER_MIN_SECONDS: '1',
      DELIVERY_BACKOFF_BASE_MS: '50',
      DELIVERY_BACKOFF_CAP_MS: '500',
      DELIVERY_MAX_IN_FLIGHT: '500',
      SHUTDOWN_TIMEOUT_MS: '5000',
      ...GENEROUS_LIMITS,
      ...(o.redisUrl ? { REDIS_URL: o.redisUrl } : {}),
      ...extra,
    };
    replicas.push({
      index: i,
      id,
      port: 0,
      env,
      logFile: join(o.dataDir, `${id}.stdout.log`),
      logRead: 0,
      logPartial: Buffer.alloc(0),
      lines: [],
      stderr: '',
    });
  }

  const killAll = () => {
    for (const r of replicas) {
      try {
        r.child?.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
  };
  // A test run that dies without stopAll() must not leave replicas behind.
  process.on('exit', killAll);

  const launch = async (r: Replica, preferredPort?: number): Promise<void> => {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      r.port = attempt === 0 && preferredPort ? preferredPort : await freePort();
      try {
        await spawnReplica(r);
        return;
      } catch (err) {
        lastError = err;
        await stopReplica(r);
      }
    }
    throw new Error(`replica ${r.id} could not start`, { cause: lastError });
  };

  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      await Promise.all(replicas.map((r) => stopReplica(r)));
      process.off('exit', killAll);
    })());

  try {
    // the first one alone: it creates the SQLite file and runs the migrations
    const [first, ...rest] = replicas;
    if (first) await launch(first);
    // allSettled: stopAll must not run while a sibling is still being spawned
    const results = await Promise.allSettled(rest.map((r) => launch(r)));
    const failed = results.find((x): x is PromiseRejectedResult => x.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (err) {
    await stopAll();
    throw err;
  }

  const at = (i: number): Replica => {
    const r = replicas[i];
    if (!r) throw new Error(`no replica ${i} (cluster of ${size})`);
    return r;
  };
  const url = (i: number) => `http://127.0.0.1:${at(i).port}`;

  return {
    size,
    jwtSecret,
    url,
    id: (i) => at(i).id,
    indexOf: (replicaId) => replicas.findIndex((r) => r.id === replicaId),
    pid: (i) => at(i).child?.pid,
    running: (i) => at(i).child !== undefined,
    lastExit: (i) => at(i).lastExit,
    token: (sub, t = {}) => signToken(jwtSecret, { sub, admin: t.admin, name: t.name }),
    async kill(i, signal) {
      const r = at(i);
      const child = r.child;
      if (!child) throw new Error(`replica ${r.id} is not running`);
      const exited = r.exited;
      child.kill(signal);
      if (signal !== 'SIGKILL' && signal !== 'SIGTERM') return;
      // bounded: a replica that ignores the signal fails the test here with its last lines
      await withinMs(Promise.resolve(exited), KILL_WAIT_MS, `replica ${r.id}'s exit after ${signal}`).catch((err: unknown) => {
        throw new Error(`${String(err)}:\n${r.stderr}\n${tail(readLines(r))}`);
      });
    },
    async restart(i) {
      const r = at(i);
      const port = r.port;
      await stopReplica(r);
      await launch(r, port);
    },
    logs: (i) => readLines(at(i)),
    sweeps: (i) => sweepLines(readLines(at(i))),
    stderr: (i) => at(i).stderr,
    async api(i, token, method, path, body, headers = {}) {
      // A network error (e.g. a keep-alive connection the server closed just as it was
      // reused) is retried when repeating is safe: reads, PUT, and idempotent-keyed POSTs.
      const repeatable = method === 'GET' || method === 'PUT' || Object.keys(headers).some((h) => h.toLowerCase() === 'idempotency-key');
      for (let attempt = 1; ; attempt++) {
        try {
          return await requestJson(`${url(i)}${path}`, token, method, body, headers);
        } catch (err) {
          if (!repeatable || attempt >= 3 || !at(i).child) throw err;
          await sleep(100 * attempt);
        }
      }
    },
    async metrics(i) {
      const res = await fetch(`${url(i)}/metrics`);
      return res.text();
    },
    stopAll,
  };
}

async function spawnReplica(r: Replica): Promise<void> {
  const out = openSync(r.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, [MAIN], {
      cwd: ROOT,
      env: { ...r.env, PORT: String(r.port) },
      stdio: ['ignore', out, 'pipe'],
    });
  } finally {
    closeSync(out); // the child has its own descriptor
  }
  r.child = child;
  let exitInfo: string | undefined;
  r.exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = `code ${code ?? '-'}, signal ${signal ?? '-'}`;
      r.lastExit = { code, signal };
      if (r.child === child) r.child = undefined;
      resolve();
    });
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    r.stderr = (r.stderr + chunk.toString('utf8')).slice(-8_000);
  });

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (exitInfo !== undefined) {
      throw new Error(`replica ${r.id} exited (${exitInfo}) before it was ready on port ${r.port}:\n${r.stderr}\n${tail(readLines(r))}`);
    }
    const ok = await fetch(`http://127.0.0.1:${r.port}/readyz`, { signal: AbortSignal.timeout(1_000) })
      .then((res) => res.status === 200)
      .catch(() => false);
    if (ok) return;
    if (Date.now() > deadline) {
      throw new Error(`replica ${r.id} was not ready on port ${r.port} within ${READY_TIMEOUT_MS} ms:\n${r.stderr}\n${tail(readLines(r))}`);
    }
    await sleep(50);
  }
}

/** SIGCONT (a stopped process would not act on SIGTERM), SIGTERM, then SIGKILL after a timeout. */
async function stopReplica(r: Replica): Promise<void> {
  const child = r.child;
  const exited = r.exited;
  if (!child || !exited) return;
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}

/** The replica's lines so far: reads what its stdout file gained since the last call. */
function readLines(r: Replica): LogLine[] {
  if (!existsSync(r.logFile)) return r.lines;
  const fd = openSync(r.logFile, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size <= r.logRead) return r.lines;
    const buf = Buffer.alloc(size - r.logRead);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, r.logRead + got);
      if (n === 0) break;
      got += n;
    }
    r.logRead += got;
    const bytes = Buffer.concat([r.logPartial, buf.subarray(0, got)]);
    const cut = bytes.lastIndexOf(0x0a);
    r.logPartial = Buffer.from(bytes.subarray(cut + 1));
    for (const line of bytes
      .subarray(0, cut + 1)
      .toString('utf8')
      .split('\n'))
      if (line) r.lines.push(parseLine(line));
    return r.lines;
  } finally {
    closeSync(fd);
  }
}

function parseLine(line: string): LogLine {
  const readAt = Date.now();
  try {
    const v: unknown = JSON.parse(line);
    if (v && typeof v === 'object' && !Array.isArray(v)) return { ...(v as Record<string, unknown>), readAt };
  } catch {
    /* not JSON */
  }
  return { raw: line, readAt };
}

function sweepLines(lines: LogLine[]): SweepLine[] {
  const out: SweepLine[] = [];
  for (const l of lines) {
    if (l.msg !== 'sweep' || typeof l.sweep !== 'object' || l.sweep === null) continue;
    const s = l.sweep as Record<string, unknown>;
    out.push({
      replica: String(l.replica),
      outcome: s.outcome as SweepLine['outcome'],
      fence: Number(s.fence),
      claimed: Number(s.claimed),
      repaired: Number(s.repaired),
      escalated: Number(s.escalated),
      failed: Number(s.failed),
      lostLease: s.lostLease === true,
      startedAt: Date.parse(String(s.startedAt)),
      endedAt: Date.parse(String(s.endedAt)),
    });
  }
  return out;
}

function tail(lines: LogLine[], n = 20): string {
  return lines
    .slice(-n)
    .map((l) => l.raw ?? JSON.stringify(l))
    .join('\n');
}
