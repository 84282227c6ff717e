/**
 * What every cluster scenario needs: a fresh DATA_DIR, a fresh store (the SQLite file in
 * it, or a fresh MongoDB database), its own throwaway Redis, a cluster of real replicas,
 * and a cleanup that leaves nothing running. Also the checks that several scenarios share
 * (sweep windows, delivery keys in the logs).
 */
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { it } from 'vitest';
import { startCluster, type Cluster, type ClusterOptions, type LogLine, type SweepLine } from '../helpers/cluster.js';
import { sqliteBackend, type ClusterStore, type StoreBackend } from '../helpers/cluster-store.js';
import { REDIS_MISSING, redisAvailable, startRedis, type RedisServer } from '../helpers/redis-server.js';

/** false → skip locally; on CI (`CI` set) a missing redis-server throws here instead, failing the run. */
export const clusterCanRun = redisAvailable();
if (!clusterCanRun) console.warn(`cluster suites skipped: ${REDIS_MISSING} (apt-get install redis-server; with CI set they fail instead)`);
export const suiteName = (name: string) => (clusterCanRun ? name : `${name} (skipped: ${REDIS_MISSING})`);

/**
 * Where scenario data lives. tmpfs when there is one: every SQLite commit fsyncs
 * (synchronous=FULL), ~4 ms each on this host's disk, and what these tests prove
 * (coordination, exactly-once) does not depend on disk speed. VIGIL_TEST_DATA_ROOT
 * overrides it (e.g. to run them on a real disk).
 */
export function dataRoot(): string {
  const wanted = process.env.VIGIL_TEST_DATA_ROOT;
  if (wanted) return wanted;
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

export interface Scenario {
  /** where the scenario keeps its state */
  backend: StoreBackend;
  cluster: Cluster;
  redis: RedisServer;
  dataDir: string;
  /** the store the replicas share: seeding and the verdicts */
  store: ClusterStore;
  /** a plain Redis client on the scenario's Redis (GET the lock key, …) */
  redisGet(key: string): Promise<string | null>;
}

export interface ScenarioRegistry {
  /** where this registry's scenarios keep their state */
  readonly backend: StoreBackend;
  start(o?: Omit<ClusterOptions, 'dataDir' | 'redisUrl'>): Promise<Scenario>;
  /** stop every cluster and Redis started so far and delete their data (afterEach/afterAll) */
  cleanup(): Promise<void>;
}

export function scenarios(backend: StoreBackend = sqliteBackend): ScenarioRegistry {
  const cleanups: (() => Promise<void>)[] = [];
  return {
    backend,
    async start(o = {}) {
      const dataDir = mkdtempSync(join(dataRoot(), 'vigil-cluster-'));
      cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
      const store = await backend.open(dataDir);
      cleanups.push(() => store.close());
      const redis = await startRedis();
      cleanups.push(() => redis.stop());
      const extra = o.env;
      const env = (i: number) => ({ ...store.env, ...(typeof extra === 'function' ? extra(i) : extra) });
      const cluster = await startCluster({ ...o, env, dataDir, redisUrl: redis.url });
      cleanups.push(() => cluster.stopAll());
      return {
        backend,
        cluster,
        redis,
        dataDir,
        store,
        async redisGet(key) {
          const client = createClient({ url: redis.url, socket: { reconnectStrategy: false } });
          client.on('error', () => {});
          await client.connect();
          try {
            return await client.get(key);
          } finally {
            client.destroy();
          }
        },
      };
    },
    async cleanup() {
      for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
    },
  };
}

/** Every sweep line of every replica. */
export function allSweeps(c: Cluster): SweepLine[] {
  return Array.from({ length: c.size }, (_, i) => c.sweeps(i)).flat();
}

/** Every log line of every replica with this `msg`. */
export function linesWith(c: Cluster, msg: string): LogLine[] {
  return Array.from({ length: c.size }, (_, i) => c.logs(i).filter((l) => l.msg === msg)).flat();
}

export interface SweepWindow {
  replica: string;
  fence: number;
  from: number;
  to: number;
}

export interface Overlap {
  a: SweepWindow;
  b: SweepWindow;
  ms: number;
}

/** Pairs of windows of different replicas that intersect (touching at one millisecond is not an overlap). */
export function overlaps(windows: SweepWindow[]): Overlap[] {
  const sorted = [...windows].sort((x, y) => x.from - y.from || x.to - y.to);
  const out: Overlap[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i]!;
    for (let j = i + 1; j < sorted.length; j++) {
      const b = sorted[j]!;
      if (b.from >= a.to) break;
      if (a.replica !== b.replica) out.push({ a, b, ms: Math.min(a.to, b.to) - b.from });
    }
  }
  return out;
}

/**
 * Windows that began before an earlier fence's window ended. The lock hands out fences
 * in acquisition order and an acquisition follows the previous release, so with a
 * working lock a window never starts before the end of any window with a lower fence.
 */
export function fenceOrderViolations(windows: SweepWindow[]): Overlap[] {
  const sorted = [...windows].sort((x, y) => x.fence - y.fence);
  const out: Overlap[] = [];
  let latest: SweepWindow | undefined;
  for (const w of sorted) {
    if (latest && w.from < latest.to) out.push({ a: latest, b: w, ms: latest.to - w.from });
    if (!latest || w.to > latest.to) latest = w;
  }
  return out;
}

/**
 * One window per fence: from the first window's start to the last one's end. A fence is one
 * acquisition, and the holder keeps its lease from one sweep to the next while deadlines
 * are near (SWEEP_KEEP_LEASE_MS), so several sweeps of one replica may share it; no other
 * replica may work inside that span. Throws when two replicas logged the same fence.
 */
export function byFence(windows: SweepWindow[]): SweepWindow[] {
  const merged = new Map<number, SweepWindow>();
  for (const w of windows) {
    const m = merged.get(w.fence);
    if (!m) merged.set(w.fence, { ...w });
    else if (m.replica !== w.replica) throw new Error(`fence ${w.fence} logged by ${m.replica} and ${w.replica}`);
    else merged.set(w.fence, { ...m, from: Math.min(m.from, w.from), to: Math.max(m.to, w.to) });
  }
  return [...merged.values()];
}

/** A sweep's logged window: `startedAt` (after the lock was taken) to `endedAt` (after it was released). */
export const loggedWindow = (s: SweepLine): SweepWindow => ({ replica: s.replica, fence: s.fence, from: s.startedAt, to: s.endedAt });

/**
 * Each sweep's window of work under the lease: from `startedAt` (stamped after the lock
 * was taken) to its last "SOS escalated" line (stamped before the release was sent).
 * With a working lock these never intersect across replicas: the release reaches Redis
 * before the next acquisition does. The logged window is wider by the release's round
 * trip and whatever else the replica's event loop was busy with, so it can overlap the
 * next holder's by a few hundred ms under load without the lock being at fault.
 */
export function workWindows(c: Cluster, outcome: SweepLine['outcome'] = 'swept'): SweepWindow[] {
  const out: SweepWindow[] = [];
  for (let i = 0; i < c.size; i++) {
    const escalations = c
      .logs(i)
      .filter((l) => l.msg === 'SOS escalated')
      .map(at);
    for (const s of c.sweeps(i)) {
      if (s.outcome !== outcome) continue;
      const last = Math.max(s.startedAt, ...escalations.filter((t) => t >= s.startedAt && t <= s.endedAt));
      out.push({ replica: s.replica, fence: s.fence, from: s.startedAt, to: last });
    }
  }
  return out;
}

/**
 * Whether every running replica has logged the sweep line of each sweep that did work.
 * The line comes after the release's round trip, which waits for whatever the
 * replica's event loop queued meanwhile, so it can trail the store by a second or more.
 */
export function sweepsLogged(c: Cluster): boolean {
  for (let i = 0; i < c.size; i++) {
    if (!c.running(i)) continue;
    const lastWork = Math.max(
      0,
      ...c
        .logs(i)
        .filter((l) => l.msg === 'SOS escalated')
        .map(at),
    );
    const lastSweepEnd = Math.max(0, ...c.sweeps(i).map((s) => s.endedAt));
    if (lastWork > lastSweepEnd) return false;
  }
  return true;
}

/** How many times each delivery key went to the (console) carrier, over every replica. */
export function smsPerKey(c: Cluster): Map<string, number> {
  const counts = new Map<string, number>();
  for (const l of linesWith(c, 'simulated SMS')) {
    const key = String(l.key);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Run `fn` over `items`, at most `limit` at once. */
export async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** The time (ms since the epoch) of a pino line. */
export const at = (l: LogLine): number => Date.parse(String(l.time));

/** How a suite title names the store: "one SQLite file", "one ferretdb database", … */
export const storeLabel = (b: StoreBackend): string => (b.name === 'sqlite' ? 'one SQLite file' : `one ${b.name} database`);

/**
 * Declare a case whose verdict relies on atomic compare-and-swap between concurrent
 * writers (several sweepers claiming at once, several dispatchers leasing at once). On
 * a backend that cannot prove that, the case is skipped with the reason in its title.
 */
export function itWithConcurrentCas(reg: ScenarioRegistry, title: string, o: { timeout: number }, fn: () => Promise<void>): void {
  const why = reg.backend.concurrentCasUnsupported;
  if (why) it.skip(`${title} (skipped on ${reg.backend.name}: ${why})`, o, fn);
  else it(title, o, fn);
}

/**
 * A scenario's size: `full` where the store answers through its indexes, `scanning` on a
 * server that reads whole collections instead (StoreBackend.scansCollections: FerretDB v1),
 * where escalating N timers costs O(N²) and the full size would not finish in time.
 */
export const sized = (b: StoreBackend, full: number, scanning: number): number => (b.scansCollections ? scanning : full);

/**
 * How long to wait for `n` units of work: `perItemMs` each, never less than `floorMs`.
 * The allowances are for a loaded 2-core machine shared with other work: a budget is a
 * deadline for "this is stuck", not a speed requirement.
 */
export const budget = (n: number, perItemMs: number, floorMs: number): number => Math.max(floorMs, Math.ceil(n * perItemMs));

/** Floor of every wait in the cluster cases: what a loaded 2-core machine may need for anything. */
export const FLOOR_MS = 30_000;

/** Until some replica has started a sweep after `since`: a tick has passed since then. */
export async function aTickAfter(c: Cluster, since: number): Promise<void> {
  const until = Date.now() + FLOOR_MS;
  while (!allSweeps(c).some((x) => x.startedAt > since)) {
    if (Date.now() > until) throw new Error(`no sweep started within ${FLOOR_MS} ms after ${new Date(since).toISOString()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A polling interval, no shorter than the backend allows (each poll of a scanning server reads every record). */
export const pollEvery = (b: StoreBackend, ms: number): number => Math.max(ms, b.minPollMs);
