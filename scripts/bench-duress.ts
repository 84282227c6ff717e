/**
 * Benchmark: does the time of a check-in tell whether its PIN was the duress PIN (issue 38,
 * docs/security.md "Duress code")? An in-process Vigil (embedded, SQLite, no ticks); per round,
 * one "I'm safe" of each kind, interleaved: the duress PIN, another PIN of a person who set one,
 * a PIN of a person who set none, and no PIN. Prints the median and p90 of each (the whole HTTP
 * round trip). The duress one also opens the silent incident (one more store write and its
 * events), so it is expected to be a little slower; what matters is that the PIN's hash, the
 * slow part, costs the same in every case that carries a PIN. Prints figures; asserts nothing.
 *   npx tsx scripts/bench-duress.ts [rounds=100]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { signToken } from '../src/auth/tokens.js';
import { loadConfig } from '../src/config.js';
import { startVigil } from '../src/main.js';

const rounds = Number(process.argv[2] ?? 100);
const dir = mkdtempSync(join(tmpdir(), 'vigil-bench-duress-'));
const config = loadConfig({
  DATA_DIR: dir,
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'silent',
  RATE_LIMIT_PER_PERSON: '1000000',
  RATE_LIMIT_CHECKINS_PER_PERSON: '1000000',
  RATE_LIMIT_PER_IP: '1000000',
});
const vigil = await startVigil(config);
const token = (sub: string, admin = false) => signToken(config.jwtSecret ?? '', { sub, admin });

async function call(tok: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${vigil.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const cases = {
  'duress PIN': { user: 'with-pin', pin: '4711' as string | undefined },
  'another PIN (PIN set)': { user: 'with-pin-2', pin: '1234' as string | undefined },
  'a PIN (none set)': { user: 'no-pin', pin: '4711' as string | undefined },
  'no PIN': { user: 'plain', pin: undefined as string | undefined },
};
for (const user of ['with-pin', 'with-pin-2']) await call(token(user), 'PUT', '/v1/me/duress', { pin: '4711' });

const times: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let n = 0; n < rounds; n++) {
  for (const [name, c] of Object.entries(cases)) {
    const tok = token(c.user);
    const armed = await call(tok, 'POST', '/v1/timers', { durationSeconds: 3600 });
    const id = String((armed.body.timer as { id: string }).id);
    const t0 = performance.now();
    const r = await call(tok, 'POST', `/v1/timers/${id}/safe`, c.pin === undefined ? undefined : { pin: c.pin });
    times[name]?.push(performance.now() - t0);
    if (r.status !== 200) throw new Error(`${name}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  // end the duress incident (untimed) so every round opens a new one
  const open = await call(token('mod', true), 'GET', '/v1/admin/incidents?status=active');
  for (const i of open.body.incidents as { id: string }[]) await call(token('mod', true), 'POST', `/v1/admin/incidents/${i.id}/resolve`);
}

const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
console.log(`duress check-in timing, ${String(rounds)} rounds (ms, whole HTTP round trip)`);
for (const [name, xs] of Object.entries(times))
  console.log(`  ${name.padEnd(24)} median ${q(xs, 0.5).toFixed(1).padStart(6)}  p90 ${q(xs, 0.9).toFixed(1).padStart(6)}`);
await vigil.stop();
rmSync(dir, { recursive: true, force: true });
