/**
 * Benchmark: what a burst of SOS costs the Socket.IO Redis adapter: `vigil` (the sharded
 * adapter as src/realtime/redis-adapter.ts sets it up: emits across replicas only to rooms
 * another replica listens to), or the adapters as they come, every emit published: `sharded`
 * (dynamic subscriptions) and `classic` (one pattern subscription per replica).
 * Replica A (this process) publishes N SOS the way the sweep does (timer.expired and
 * sos.triggered per timer, groups of 50, one group per event-loop turn); replica B (a child
 * process) has a moderator socket and 100 of the N people connected. Prints A's CPU time
 * and event-loop utilisation until B's moderator has every SOS, B's CPU time, and what went
 * through Redis (publishes, bytes in and out). Prints figures; asserts nothing.
 *   npx tsx scripts/bench-fanout.ts [vigil|sharded|classic] [sos=10000]
 */
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createClient } from 'redis';
import { io as connectClient } from 'socket.io-client';
import { signToken } from '../src/auth/tokens.js';
import { createMetrics } from '../src/metrics.js';
import type { VigilEvent } from '../src/realtime/events.js';
import { createAdapter, createShardedAdapter } from '@socket.io/redis-adapter';
import { connectRedisAdapter } from '../src/realtime/redis-adapter.js';
import type { Replicas } from '../src/realtime/replicas.js';
import { createRealtime } from '../src/realtime/server.js';
import { startRedis } from '../test/helpers/redis-server.js';

const SECRET = 'bench-fanout-secret-bench-fanout-secret';
const CONNECTED_PEOPLE = 100;
const GROUP = 50;
const log = pino({ level: 'silent' });

type Mode = 'vigil' | 'sharded' | 'classic';

/** The adapter as it comes: every emit is published (no question who listens). */
async function plain(url: string, mode: Mode): Promise<Replicas & { close(): Promise<void> }> {
  const pub = createClient({ url });
  const sub = pub.duplicate();
  await Promise.all([pub.connect(), sub.connect()]);
  return {
    adapter: mode === 'classic' ? createAdapter(pub, sub, { key: 'bench' }) : createShardedAdapter(pub, sub, { channelPrefix: 'bench' }),
    listening: async () => {},
    heardElsewhere: async (rooms) => new Set(rooms),
    close: async () => void (await Promise.allSettled([pub.close(), sub.close()])),
  };
}

async function replica(url: string, mode: Mode) {
  const http = createServer();
  const replicas = mode === 'vigil' ? await connectRedisAdapter(url, log) : await plain(url, mode);
  const rt = createRealtime(http, { jwtSecret: SECRET, metrics: createMetrics({ replica: 'b', collectDefault: false }), log, replicas });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return { http, rt, replicas, url: `http://127.0.0.1:${(http.address() as AddressInfo).port}` };
}

const connectAs = (url: string, sub: string, admin: boolean) =>
  new Promise<ReturnType<typeof connectClient>>((resolve, reject) => {
    const s = connectClient(url, { auth: { token: signToken(SECRET, { sub, admin }) }, transports: ['websocket'], reconnection: false });
    s.once('ready', () => resolve(s));
    s.once('connect_error', reject);
  });

/** Replica B: a moderator and the first people connected; reports what it received and its CPU time. */
async function childMain(url: string, mode: Mode) {
  const b = await replica(url, mode);
  const got = { sos: 0, moderatorEmits: 0, personEvents: 0 };
  const mod = await connectAs(b.url, 'bench-moderator', true);
  mod.on('events.batch', (p: { events: { name: string }[] }) => {
    got.moderatorEmits++;
    got.sos += p.events.filter((e) => e.name === 'sos.triggered').length;
  });
  for (let i = 0; i < CONNECTED_PEOPLE; i++) (await connectAs(b.url, `u${i}`, false)).onAny(() => got.personEvents++);
  let cpu = process.cpuUsage();
  process.on('message', (m: string) => {
    if (m === 'start') cpu = process.cpuUsage();
    if (m === 'report') process.send?.({ ...got, cpuMs: cpuMs(process.cpuUsage(cpu)) });
    if (m === 'stop') process.exit(0);
  });
  process.send?.('ready');
}

const cpuMs = (u: NodeJS.CpuUsage) => Math.round((u.user + u.system) / 1000);

function events(i: number): VigilEvent[] {
  const userId = `u${i}`;
  const at = new Date().toISOString();
  const timer = {
    id: `tmr_${i}`,
    userId,
    status: 'expired',
    startedAt: at,
    expiresAt: at,
    updatedAt: at,
    extensions: 0,
    incidentId: `inc_${i}`,
  };
  const incident = {
    id: `inc_${i}`,
    timerId: timer.id,
    userId,
    status: 'active',
    deadline: at,
    createdAt: at,
    updatedAt: at,
    locationName: 'Blue Bottle Café',
    location: { lat: 37.7765, lng: -122.4231 },
    displayName: `Person ${i}`,
    source: 'timer',
    sources: ['timer'],
  };
  return [
    {
      name: 'timer.expired',
      eventId: `timer.expired:${timer.id}`,
      userId,
      toAdmins: true,
      payload: { eventId: `timer.expired:${timer.id}`, timer },
    },
    {
      name: 'sos.triggered',
      eventId: `sos.triggered:${incident.id}`,
      userId,
      toAdmins: true,
      payload: { eventId: `sos.triggered:${incident.id}`, incident },
    },
  ];
}

async function main() {
  const mode = (['sharded', 'classic'].includes(process.argv[2] ?? '') ? process.argv[2] : 'vigil') as Mode;
  const n = Number(process.argv[3] ?? 10_000);
  const redis = await startRedis();
  const admin = createClient({ url: redis.url });
  await admin.connect();
  const child = fork(fileURLToPath(import.meta.url), ['--replica', redis.url, mode], { stdio: 'inherit' });
  const fromChild = <T>() => new Promise<T>((resolve) => child.once('message', (m) => resolve(m as T)));
  await fromChild<string>();
  const a = await replica(redis.url, mode);
  const stats = async () => {
    const info = `${await admin.info('commandstats')}\n${await admin.info('stats')}`;
    const num = (re: RegExp) => Number(re.exec(info)?.[1] ?? 0);
    return {
      publishes: num(/cmdstat_publish:calls=(\d+)/) + num(/cmdstat_spublish:calls=(\d+)/),
      inBytes: num(/total_net_input_bytes:(\d+)/),
      outBytes: num(/total_net_output_bytes:(\d+)/),
    };
  };
  try {
    const before = await stats();
    child.send('start');
    const cpu = process.cpuUsage();
    const elu = performance.eventLoopUtilization();
    const t0 = performance.now();
    for (let g = 0; g < n; g += GROUP) {
      for (let i = g; i < Math.min(n, g + GROUP); i++) for (const e of events(i)) a.rt.publisher.publish(e);
      await new Promise((r) => setImmediate(r));
    }
    const publishedMs = performance.now() - t0;
    let got: { sos: number; moderatorEmits: number; personEvents: number; cpuMs: number };
    for (;;) {
      child.send('report');
      got = await fromChild();
      if (got.sos >= n || performance.now() - t0 > 60_000) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const allMs = performance.now() - t0;
    const aCpu = cpuMs(process.cpuUsage(cpu));
    const aElu = performance.eventLoopUtilization(elu);
    const after = await stats();
    console.log(
      `${mode}: ${n} SOS (${2 * n} events) published by A in ${publishedMs.toFixed(0)} ms; B's moderator had ${got.sos} SOS in ` +
        `${got.moderatorEmits} emits after ${allMs.toFixed(0)} ms; B's people got ${got.personEvents} events. ` +
        `A: CPU ${aCpu} ms, event loop busy ${(aElu.utilization * 100).toFixed(0)} % of ${aElu.active.toFixed(0)}+${aElu.idle.toFixed(0)} ms; ` +
        `B: CPU ${got.cpuMs} ms. Redis: ${after.publishes - before.publishes} publishes, ` +
        `${((after.inBytes - before.inBytes) / 1e6).toFixed(1)} MB in, ${((after.outBytes - before.outBytes) / 1e6).toFixed(1)} MB out`,
    );
  } finally {
    child.send('stop');
    await a.rt.close();
    a.http.close();
    await a.replicas.close();
    await admin.close();
    await redis.stop();
  }
}

if (process.argv[2] === '--replica') await childMain(process.argv[3] ?? '', (process.argv[4] ?? 'vigil') as Mode);
else await main();
