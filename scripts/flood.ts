/**
 * Flood benchmark: one token floods an embedded Vigil (a child process) as fast as this
 * machine allows, over N keep-alive connections, while other people check in ("I'm safe")
 * 1–3 s before their deadlines. Prints the flood rate, its 429s, the check-in answer times
 * and how many people ended safe or got an SOS (the goal: none, and p99 ≤ 200 ms).
 *   npm run flood -- [--conns 64] [--seconds 10] [--people 200]
 * RATE_LIMIT_* variables in the environment are passed on to the service.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { signToken } from '../src/auth/tokens.js';

const { values } = parseArgs({
  options: {
    conns: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '10' },
    people: { type: 'string', default: '200' },
  },
});
const conns = Number(values.conns);
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
  const passOn = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('RATE_LIMIT_') || k.startsWith('HTTP_')));
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
    const flooder = new Worker(FLOODER, { eval: true, workerData: { port, token: token('flooder'), conns, ms: floodMs } });
    const flood = new Promise<FloodCounts>((resolve, reject) => {
      flooder.once('message', resolve);
      flooder.once('error', reject);
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
                fetch(`${base}/v1/timers/${a.id}/safe`, { method: 'POST', headers: { authorization: `Bearer ${a.token}` } })
                  .then(async (r) => {
                    await r.arrayBuffer();
                    latencies.push(performance.now() - t0);
                    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
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
    const total = counts.ok + counts.limited + counts.other + counts.errors;
    const ms = (v: number) => `${v.toFixed(1)} ms`;
    console.log(`flood: ${conns} keep-alive connections, ${floodSeconds.toFixed(1)} s, one token`);
    console.log(
      `  requests/s ${(total / floodSeconds).toFixed(0)}  answered 2xx ${counts.ok}  429 ${counts.limited}  other ${counts.other}  errors ${counts.errors}`,
    );
    console.log(`check-ins: ${armed.length} people, "I'm safe" 1-3 s before the deadline`);
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
