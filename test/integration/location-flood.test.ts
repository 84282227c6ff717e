/**
 * A `location.fix` flood costs no store reads past the budget (docs/security.md): every attempt
 * is charged to the socket's budget before the message is parsed, and to the person's before
 * the store is read, a made-up timer id included. Against a real in-process Vigil (embedded),
 * with the store's reads counted on the very object the service holds.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { connect, type Recorder } from '../helpers/sockets.js';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';

const BUDGET = 5;
const FIX = { lat: 52.52, lng: 13.405 };

let v: TestVigil;
beforeAll(async () => {
  v = await startTestVigil({ LOCATION_MIN_INTERVAL_SECONDS: '0', LOCATION_MAX_PER_MINUTE: String(BUDGET) }, { manualTicks: true });
});
afterAll(async () => {
  await v?.stop();
});
const sockets: Recorder[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const s of sockets.splice(0)) s.close();
});

/** Every store read a fix can cost before the rate rules (the timer, its incident, the clock). */
function countStoreReads(): () => number {
  const store = v.vigil.store;
  const spies = [
    vi.spyOn(store, 'getTimer'),
    vi.spyOn(store, 'getIncident'),
    vi.spyOn(store, 'incidentForTimer'),
    vi.spyOn(store, 'now'),
    vi.spyOn(store, 'lastFix'),
  ];
  return () => spies.reduce((n, s) => n + s.mock.calls.length, 0);
}

type Ack = { ok: boolean; error?: { code: string; details?: { retryAfterSeconds?: number } } };
const send = (r: Recorder, timerId: string) => r.socket.timeout(5000).emitWithAck('location.fix', { timerId, ...FIX }) as Promise<Ack>;
const codes = (acks: Ack[]) =>
  acks.reduce<Record<string, number>>((m, a) => ((m[a.error?.code ?? 'ok'] = (m[a.error?.code ?? 'ok'] ?? 0) + 1), m), {});

describe('location.fix flood', () => {
  it('one socket: past its budget the messages are refused before they reach the service', async () => {
    const r = await connect(v.url, v.token('flood-socket'));
    sockets.push(r);
    const post = vi.spyOn(v.vigil.location, 'post');
    const reads = countStoreReads();
    const acks = await Promise.all(Array.from({ length: 60 }, (_, i) => send(r, `made-up-${i}`)));
    expect(codes(acks)).toEqual({ timer_not_found: BUDGET, rate_limited: 60 - BUDGET });
    expect(post).toHaveBeenCalledTimes(BUDGET);
    expect(reads()).toBeLessThanOrEqual(BUDGET);
    const limited = acks.find((a) => a.error?.code === 'rate_limited');
    expect(limited?.error?.details?.retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it('many sockets of one person, and REST: the person’s budget is charged before any store read, made-up ids included', async () => {
    const token = v.token('flood-person');
    const own = await Promise.all(Array.from({ length: 4 }, () => connect(v.url, token)));
    sockets.push(...own);
    const reads = countStoreReads();
    // four sockets each within their own budget: together four times the person's
    const acks = (await Promise.all(own.map((r) => Promise.all(Array.from({ length: BUDGET }, (_, i) => send(r, `made-up-${i}`)))))).flat();
    expect(codes(acks)).toEqual({ timer_not_found: BUDGET, rate_limited: 3 * BUDGET });
    // the REST route shares the person's budget
    const rest = await v.api(token, 'POST', '/v1/timers/made-up-rest/location', FIX);
    expect(rest.status).toBe(429);
    expect(rest.body.error.code).toBe('rate_limited');
    expect(Number(rest.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // one timer read per admitted attempt (a made-up id stops there), none for the refused ones
    expect(reads()).toBe(BUDGET);
    // refusals are counted, those of the socket budget and of the person's alike
    const text = await v.vigil.metrics.registry.metrics();
    const limited = /^vigil_location_fixes_total\{[^}]*outcome="rate_limited"[^}]*\} (\d+)$/m.exec(text);
    expect(Number(limited?.[1])).toBeGreaterThanOrEqual(3 * BUDGET + 1);
  });

  it('another person is not held back by the flood', async () => {
    const alice = v.token('flood-bystander');
    const t = (await v.api(alice, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    const r = await v.api(alice, 'POST', `/v1/timers/${t.id}/location`, FIX);
    expect(r.status).toBe(200);
    expect(r.body.kept).toBe(true);
  });
});
