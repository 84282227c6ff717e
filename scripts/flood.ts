/**
 * Flood benchmark: one token floods an embedded Vigil (a child process) as fast as this
 * machine allows, while other people check in ("I'm safe") 1–3 s before their deadlines.
 * Prints the flood rate and how it was answered, the check-in answer times and how many
 * people ended safe or got an SOS (the goal: none, and p99 ≤ 200 ms).
 *   npm run flood -- [--flood http|location|handshake] [--conns 64] [--seconds 10] [--people 200]
 * `http` (default): GET /v1/timers over N keep-alive connections. `location`: `location.fix`
 * messages with made-up timer ids over N Socket.IO connections of the token (at most
 * SOCKETS_PER_USER, 10 by default), 32 in flight on each; every `timer_not_found` answer is a
 * store read, every `rate_limited` one a message refused before the store. `handshake`:
 * token-less Socket.IO handshakes from one address, N (32) at a time, three in four WebSocket
 * upgrades kept open and idle (never authenticating), one in four long-polling handshakes.
 * RATE_LIMIT_*, HTTP_*, SOCKETS_* and LOCATION_* variables in the environment are passed on to the service.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { signToken } from '../src/auth/tokens.js';

const { values } = parseArgs({
  options: {
    flood: { type: 'string', default: 'http' },
    conns: { type: 'string' },
    seconds: { type: 'string', default: '10' },
    people: { type: 'string', default: '200' },
  },
});
const kind = values.flood;
if (kind !== 'http' && kind !== 'location' && kind !== 'handshake') throw new Error('--flood must be http, location or handshake');
const conns = Number(values.conns ?? { http: 64, location: 8, handshake: 32 }[kind]);
const floodMs = Number(values.seconds) * 1000;
const people = Number(values.people);

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });

// The flooder runs on its own thread so that its loop does not delay the check-ins we time.
const FLOODER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { port, token, conns, ms } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: conns });
const counts = { ok: 0, limited: 0, other: 0, errors: 0 };
const start = Date.now();
const end = start + ms;
const one = () => new Promise((resolve) => {
  const req = http.request({ host: '127.0.0.1', port, path: '/v1/timers', agent, headers: { authorization: 'Bearer ' + token } }, (res) => {
    res.resume();
    res.on('end', () => {
      if (res.statusCode === 429) counts.limited++; else if (res.statusCode < 300) counts.ok++; else counts.other++;
      resolve();
    });
  });
  req.on('error', () => { counts.errors++; setTimeout(resolve, 10); });
  req.end();
});
const loop = async () => { while (Date.now() < end) await one(); };
Promise.all(Array.from({ length: conns }, loop)).then(() => { agent.destroy(); parentPort.postMessage({ ...counts, seconds: (Date.now() - start) / 1000 }); });
`;

// The same, over Socket.IO: location.fix messages for timers that do not exist, 32 in flight per socket.
const LOCATION_FLOODER = `
const { parentPort, workerData } = require('node:worker_threads');
const { io } = require('socket.io-client');
const { url, token, conns, ms } = workerData;
const answers = {};
let sent = 0;
const one = (socket) => new Promise((resolve) => {
  socket.timeout(5000).emit('location.fix', { timerId: 'made-up-' + sent++, lat: 52.52, lng: 13.405 }, (err, ack) => {
    const k = err ? 'timeout' : ack && ack.ok ? 'ok' : (ack && ack.error && ack.error.code) || 'other';
    answers[k] = (answers[k] || 0) + 1;
    resolve();
  });
});
const connect = () => new Promise((resolve, reject) => {
  const s = io(url, { auth: { token }, transports: ['websocket'], reconnection: false, forceNew: true });
  s.once('connect', () => resolve(s));
  s.once('connect_error', reject);
});
(async () => {
  const sockets = await Promise.all(Array.from({ length: conns }, connect));
  const start = Date.now();
  const end = start + ms;
  await Promise.all(sockets.flatMap((s) => Array.from({ length: 32 }, async () => { while (Date.now() < end) await one(s); })));
  for (const s of sockets) s.close();
  parentPort.postMessage({ answers, seconds: (Date.now() - start) / 1000 });
})().catch((err) => parentPort.postMessage({ error: String(err) }));
`;

// Token-less handshakes written by hand: WebSocket upgrades held open and idle, long-polling
// handshakes that leave a session behind. Counts each answer by status (0: closed unanswered).
const HANDSHAKE_FLOODER = `
const { parentPort, workerData } = require('node:worker_threads');
const net = require('node:net');
const http = require('node:http');
const { port, conns, ms } = workerData;
const answers = {};
const bump = (k) => (answers[k] = (answers[k] || 0) + 1);
let open = 0, peak = 0;
const held = new Set();
const start = Date.now();
const end = start + ms;
const upgrade = () => new Promise((resolve) => {
  const s = net.connect(port, '127.0.0.1');
  let head = '', status;
  s.on('error', () => {});
  s.on('data', (c) => {
    if (status) return;
    head += c.toString('latin1');
    const m = /^HTTP\\/1\\.1 (\\d{3})/.exec(head);
    if (!m) return;
    status = m[1];
    bump('websocket ' + status);
    if (status === '101') { held.add(s); peak = Math.max(peak, ++open); resolve(); }
  });
  s.on('close', () => {
    if (status === '101') { open--; held.delete(s); return; }
    if (!status) bump('websocket 0');
    resolve();
  });
  s.write('GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\\r\\nHost: x\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n' +
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n');
});
const polling = () => new Promise((resolve) => {
  const req = http.get({ host: '127.0.0.1', port, path: '/socket.io/?EIO=4&transport=polling', agent: false }, (res) => {
    res.resume();
    res.on('end', () => { bump('polling ' + res.statusCode); resolve(); });
  });
  req.on('error', () => { bump('polling 0'); resolve(); });
});
const loop = async (one) => { while (Date.now() < end) await one(); };
Promise.all(Array.from({ length: conns }, (_, i) => loop(i % 4 === 3 ? polling : upgrade))).then(() => {
  const seconds = (Date.now() - start) / 1000;
  for (const s of held) s.destroy();
  parentPort.postMessage({ handshakes: answers, peakOpen: peak, seconds });
});
`;

interface HandshakeFloodCounts {
  seconds: number;
  handshakes: Record<string, number>;
  peakOpen: number;
}

interface LocationFloodCounts {
  seconds: number;
  answers: Record<string, number>;
  error?: string;
}

interface FloodCounts {
  seconds: number;
  ok: number;
  limited: number;
  other: number;
  errors: number;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-flood-'));
  const secret = randomBytes(32).toString('hex');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const passOn = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => ['RATE_LIMIT_', 'HTTP_', 'SOCKETS_', 'LOCATION_'].some((p) => k.startsWith(p))),
  );
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: dir,
      PORT: String(port),
      HOST: '127.0.0.1',
      JWT_SECRET: secret,
      TIMER_MIN_SECONDS: '1',
      LOG_LEVEL: 'warn',
      ...passOn,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let childOutput = '';
  child.stderr.on('data', (c: Buffer) => {
    childOutput = (childOutput + c.toString('utf8')).slice(-4000);
  });
  const stopChild = () => child.kill('SIGTERM');
  process.on('exit', stopChild);
  try {
    const until = Date.now() + 60_000;
    for (;;) {
      const ok = await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > until || child.exitCode !== null) throw new Error(`the service did not become ready:\n${childOutput}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const token = (sub: string, admin = false) => signToken(secret, { sub, admin }, 3600);

    // 200 people arm timers whose deadlines fall inside the flood
    const persons = Array.from({ length: people }, (_, i) => ({ sub: `person-${i}`, token: token(`person-${i}`) }));
    const armed: { sub: string; token: string; id: string; expiresAt: number }[] = [];
    for (let i = 0; i < persons.length; i += 20) {
      await Promise.all(
        persons.slice(i, i + 20).map(async (p, j) => {
          const durationSeconds = 5 + Math.floor(((i + j) / people) * 8);
          const r = await fetch(`${base}/v1/timers`, {
            method: 'POST',
            headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ durationSeconds }),
          });
          const body = (await r.json()) as { timer: { id: string; expiresAt: string } };
          armed.push({ ...p, id: body.timer.id, expiresAt: Date.parse(body.timer.expiresAt) });
        }),
      );
    }

    const scrape = async () => (await fetch(`${base}/metrics`)).text();
    const metric = (text: string, suffix: string) => {
      const line = text.split('\n').find((l) => !l.startsWith('#') && l.split(/[ {]/)[0]?.endsWith(suffix));
      return line ? Number(line.split(' ').at(-1)) : NaN;
    };
    const cpuBefore = metric(await scrape(), 'process_cpu_seconds_total'); // the event-loop figures restart from here
    const flooder =
      kind === 'http'
        ? new Worker(FLOODER, { eval: true, workerData: { port, token: token('flooder'), conns, ms: floodMs } })
        : kind === 'location'
          ? new Worker(LOCATION_FLOODER, { eval: true, workerData: { url: base, token: token('flooder'), conns, ms: floodMs } })
          : new Worker(HANDSHAKE_FLOODER, { eval: true, workerData: { port, conns, ms: floodMs } });
    const flood = new Promise<FloodCounts | LocationFloodCounts | HandshakeFloodCounts>((resolve, reject) => {
      flooder.once('message', resolve);
      flooder.once('error', reject);
    });

    // a handshake flood is after the connections: each check-in then opens its own, as a phone
    // that just woke up does (the other floods: the pooled keep-alive connections of fetch)
    const checkIn = (a: { id: string; token: string }) =>
      kind === 'handshake'
        ? new Promise<number>((resolve, reject) => {
            const req = httpRequest(
              `${base}/v1/timers/${a.id}/safe`,
              { method: 'POST', agent: false, headers: { authorization: `Bearer ${a.token}` } },
              (res) => {
                res.resume();
                res.on('end', () => resolve(res.statusCode ?? 0));
              },
            );
            req.on('error', reject);
            req.end();
          })
        : fetch(`${base}/v1/timers/${a.id}/safe`, { method: 'POST', headers: { authorization: `Bearer ${a.token}` } }).then(async (r) => {
            await r.arrayBuffer();
            return r.status;
          });
    const latencies: number[] = [];
    const statuses = new Map<number, number>();
    await Promise.all(
      armed.map(
        (a) =>
          new Promise<void>((resolve) => {
            const lead = 1000 + Math.random() * 2000;
            setTimeout(
              () => {
                const t0 = performance.now();
                checkIn(a)
                  .then((status) => {
                    latencies.push(performance.now() - t0);
                    statuses.set(status, (statuses.get(status) ?? 0) + 1);
                  })
                  .catch(() => statuses.set(0, (statuses.get(0) ?? 0) + 1))
                  .finally(resolve);
              },
              Math.max(0, a.expiresAt - lead - Date.now()),
            );
          }),
      ),
    );
    const counts = await flood;
    const during = await scrape();
    const floodSeconds = counts.seconds;

    // let every deadline pass and the sweeper run, then see who ended where
    const last = Math.max(...armed.map((a) => a.expiresAt));
    await new Promise((r) => setTimeout(r, Math.max(0, last - Date.now()) + 3000));
    const ended = new Map<string, number>();
    for (const a of armed) {
      const r = await fetch(`${base}/v1/timers/${a.id}`, { headers: { authorization: `Bearer ${a.token}` } });
      const s = r.ok ? ((await r.json()) as { timer: { status: string } }).timer.status : `http ${r.status}`;
      ended.set(s, (ended.get(s) ?? 0) + 1);
    }
    const incidents = (await (
      await fetch(`${base}/v1/admin/incidents`, { headers: { authorization: `Bearer ${token('flood-moderator', true)}` } })
    ).json()) as { incidents: unknown[] };

    latencies.sort((x, y) => x - y);
    const ms = (v: number) => `${v.toFixed(1)} ms`;
    if ('handshakes' in counts) {
      const h = counts.handshakes;
      const total = Object.values(h).reduce((a, b) => a + b, 0);
      const refused = (reason: string) => {
        const line = during.split('\n').find((l) => l.startsWith('vigil_socketio_refused_total{') && l.includes(`reason="${reason}"`));
        return line ? Number(line.split(' ').at(-1)) : 0;
      };
      console.log(`flood: token-less Socket.IO handshakes from one address, ${conns} at a time, ${floodSeconds.toFixed(1)} s`);
      console.log(
        `  handshakes/s ${(total / floodSeconds).toFixed(0)}  answers ${Object.entries(h)
          .sort()
          .map(([k, n]) => `${k}×${n}`)
          .join(' ')}  idle WebSockets open at most ${counts.peakOpen}`,
      );
      console.log(`  refused by the service: rate_limited ${refused('rate_limited')}  full ${refused('full')}`);
    } else if ('answers' in counts) {
      if (counts.error) throw new Error(`the location flooder failed: ${counts.error}`);
      const total = Object.values(counts.answers).reduce((a, b) => a + b, 0);
      const a = counts.answers;
      console.log(`flood: location.fix with made-up timer ids, ${conns} sockets of one token, ${floodSeconds.toFixed(1)} s`);
      const others = Object.entries(a).filter(([k]) => k !== 'rate_limited' && k !== 'timer_not_found');
      console.log(
        `  messages/s ${(total / floodSeconds).toFixed(0)}  refused before the store (rate_limited) ${a.rate_limited ?? 0}` +
          `  store reads (timer_not_found) ${a.timer_not_found ?? 0}  other ${others.map(([k, n]) => `${k}×${n}`).join(' ') || '0'}`,
      );
    } else {
      const total = counts.ok + counts.limited + counts.other + counts.errors;
      console.log(`flood: ${conns} keep-alive connections, ${floodSeconds.toFixed(1)} s, one token`);
      console.log(
        `  requests/s ${(total / floodSeconds).toFixed(0)}  answered 2xx ${counts.ok}  429 ${counts.limited}  other ${counts.other}  errors ${counts.errors}`,
      );
    }
    console.log(
      `check-ins: ${armed.length} people, "I'm safe" 1-3 s before the deadline${kind === 'handshake' ? ', each on a new connection' : ''}`,
    );
    console.log(`  answers ${[...statuses].map(([s, n]) => `${s}×${n}`).join(' ')}`);
    console.log(`  p50 ${ms(pct(latencies, 50))}  p99 ${ms(pct(latencies, 99))}  max ${ms(latencies.at(-1) ?? NaN)}`);
    console.log(
      `service event loop during the run: delay p99 ${ms(metric(during, 'eventloop_lag_p99_seconds') * 1000)}  max ${ms(metric(during, 'eventloop_lag_max_seconds') * 1000)}`,
    );
    console.log(`service CPU during the run: ${(metric(during, 'process_cpu_seconds_total') - cpuBefore).toFixed(2)} s`);
    console.log(`ended: ${[...ended].map(([s, n]) => `${s} ${n}`).join(', ')}`);
    console.log(`SOS incidents: ${incidents.incidents.length} (must be 0)`);
    process.exitCode = incidents.incidents.length === 0 ? 0 : 1;
  } finally {
    process.off('exit', stopChild);
    stopChild();
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
