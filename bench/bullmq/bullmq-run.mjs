/**
 * BullMQ side of `npm run bench`: the same timing workloads as delayed jobs doing the same
 * shape of work as Vigil's escalation. One delayed job per person, due at the workload's
 * deadline; a Worker (concurrency 50) runs each job:
 *   - publishes one `sos.triggered` ({ incident: { id, deadline } }) to the `admins` room of
 *     Socket.IO server A, in this process; A and B (a process of its own, ./socket-server.mjs)
 *     share `@socket.io/redis-adapter` (sharded, dynamic subscriptions, as Vigil's cluster) on
 *     the same redis-server as BullMQ, and the harness's moderator socket is on B, so every
 *     event crosses the adapter between two processes as it does between Vigil's replicas;
 *   - sends the person's two texts to the harness's fake carrier (Twilio's REST API: POST
 *     Messages.json, form-encoded, basic auth, on node:http with keep-alive as Vigil does)
 *     with at most `maxInFlight` sends in flight across all of the worker's jobs, and waits
 *     for both answers.
 * Lateness of a job = its completion (the worker's `completed` event, after BullMQ has moved
 * it to completed in Redis, so after both texts were answered) − its due time.
 *
 * Driven by bench/bullmq.ts over the IPC channel:
 *   node bench/bullmq/bullmq-run.mjs '{"redisUrl":"redis://127.0.0.1:6390","kind":"burst","count":1000,
 *     "carrier":{"url":"…","accountSid":"AC…","authToken":"…","from":"+1…"},"maxInFlight":96}'
 *   → { type: 'listening', moderatorUrl }        (server B: the harness connects its moderator there)
 *   ← { type: 'start', phones: [[a, b], …] }     (each person's two contacts; one job per person)
 *   → { type: 'result', count, completed, failed, dues, p50Ms, … }
 *   ← { type: 'stop' }                           (the harness has read the sockets and the carrier)
 */
import { fork } from 'node:child_process';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from 'bullmq';
import { ADMINS, socketServer } from './socket-server.mjs';

const cfg = JSON.parse(process.argv[2] ?? '{}');
const url = new URL(cfg.redisUrl);
const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
const concurrency = cfg.concurrency ?? 50;
const n = cfg.kind === 'steady' ? cfg.rate * cfg.seconds : cfg.count;

const messages = [];
let wake;
process.on('message', (m) => {
  messages.push(m);
  wake?.();
});
// the harness is gone (killed, crashed): nobody will read the result or say stop
process.on('disconnect', () => process.exit(1));
/** the next IPC message of `type` from the harness */
async function next(type) {
  for (;;) {
    const i = messages.findIndex((m) => m?.type === type);
    if (i >= 0) return messages.splice(i, 1)[0];
    await new Promise((resolve) => (wake = resolve));
  }
}

/** Server B, a process of its own: where the harness's moderator socket connects. */
async function forkServerB() {
  const child = fork(join(dirname(fileURLToPath(import.meta.url)), 'socket-server.mjs'), [cfg.redisUrl], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const listening = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`socket-server exited ${code}`)));
  });
  return {
    url: listening.url,
    async close() {
      child.send({ type: 'stop' });
      await exited;
    },
  };
}

// at most maxInFlight sends at once, across every job the worker runs
let inFlight = 0;
const waiting = [];
async function withSlot(fn) {
  if (inFlight >= cfg.maxInFlight) await new Promise((resolve) => waiting.push(resolve));
  else inFlight++;
  try {
    return await fn();
  } finally {
    const nextSend = waiting.shift();
    if (nextSend) nextSend();
    else inFlight--;
  }
}

// on node:http with keep-alive sockets kept as many as sends in flight, as Vigil's Twilio carrier sends (src/sms/twilio.ts)
const carrier = cfg.carrier;
const messagesUrl = new URL(`${carrier.url}/2010-04-01/Accounts/${carrier.accountSid}/Messages.json`);
const auth = `Basic ${Buffer.from(`${carrier.accountSid}:${carrier.authToken}`).toString('base64')}`;
const agent = new http.Agent({ keepAlive: true, maxSockets: cfg.maxInFlight, maxFreeSockets: cfg.maxInFlight });
function sendSms(to, text) {
  const body = new URLSearchParams({ To: to, From: carrier.from, Body: text }).toString();
  return new Promise((resolve, reject) => {
    const req = http.request(
      messagesUrl,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: auth,
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.once('end', () => (res.statusCode === 201 ? resolve() : reject(new Error(`carrier answered ${res.statusCode}`))));
        res.once('error', reject);
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

const a = await socketServer(cfg.redisUrl);
const b = await forkServerB();
const queue = new Queue('bench', { connection });
const late = [];
let failed = 0;
let firstFailure;
let lastCompleted = 0;
let resolveDone;
const done = new Promise((resolve) => (resolveDone = resolve));
const worker = new Worker(
  'bench',
  async (job) => {
    const { i, due, to } = job.data;
    const deadline = new Date(due).toISOString();
    a.io.to(ADMINS).emit('sos.triggered', { incident: { id: `bench-${i}`, deadline } });
    const body = `SOS: Bench person ${i} did not check in by ${deadline}. Call them or emergency services.`;
    await Promise.all(to.map((phone) => withSlot(() => sendSms(phone, body))));
  },
  { connection, concurrency },
);
worker.on('completed', (job) => {
  const now = Date.now();
  late.push(now - job.data.due);
  lastCompleted = Math.max(lastCompleted, now);
  if (late.length + failed >= n) resolveDone();
});
worker.on('failed', (_job, err) => {
  failed++;
  firstFailure ??= err.message;
  if (late.length + failed >= n) resolveDone();
});
await worker.waitUntilReady();
process.send({ type: 'listening', moderatorUrl: b.url });
const { phones } = await next('start');

// deadlines: a burst spreads over one second (as Vigil's whole-second durations do), steady is evenly paced
const t0 = Date.now() + 3000 + n * 0.3;
const dues = Array.from({ length: n }, (_, i) => (cfg.kind === 'steady' ? t0 + (i * 1000) / cfg.rate : t0 + (i / n) * 1000));
for (let i = 0; i < n; i += 500) {
  const now = Date.now();
  await queue.addBulk(
    dues.slice(i, i + 500).map((due, j) => ({
      name: 'timer',
      data: { i: i + j, due, to: phones[i + j] },
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

late.sort((x, y) => x - y);
const pct = (p) => (late.length ? late[Math.min(late.length, Math.max(1, Math.ceil((p / 100) * late.length))) - 1] : null);
process.send({
  type: 'result',
  count: n,
  completed: late.length,
  failed,
  firstFailure: firstFailure ?? null,
  outcome,
  dues,
  p50Ms: pct(50),
  p99Ms: pct(99),
  maxMs: late.length ? late[late.length - 1] : null,
  drainMs: lastCompleted ? lastCompleted - lastDue : null,
  peakRssMb: process.resourceUsage().maxRSS / 1024,
  eldP99Ms: loop.percentile(99) / 1e6,
});
await next('stop');
await worker.close(true);
await queue.close();
await Promise.all([a.close(), b.close()]);
process.exit(0);
