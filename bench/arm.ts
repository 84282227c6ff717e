/**
 * Arming through the REST API, as the app does: each person has 2 contacts
 * (PUT /v1/me/contacts) and one timer (POST /v1/timers). Requests go round-robin over the
 * replicas (a load balancer) with bounded concurrency.
 */
import type { Vigil } from './vigil.js';

export interface Person {
  userId: string;
  token: string;
}

export interface Armed extends Person {
  timerId: string;
  /** epoch ms, as the service answered */
  expiresAt: number;
}

const CONCURRENCY = 16;

/** Run `fn` over `items` with at most `limit` in flight; the answers in order. */
export async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T, i);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export async function call(
  vigil: Vigil,
  i: number,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const url = vigil.urls[i % vigil.urls.length];
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      // a rate limit or an overloaded store answers 429/503: wait and repeat (the calls here are idempotent)
      if ((res.status === 429 || res.status === 503) && attempt < 20) {
        await new Promise((r) => setTimeout(r, 100 * attempt));
        continue;
      }
      return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

export function people(vigil: Vigil, prefix: string, n: number): Person[] {
  return Array.from({ length: n }, (_, i) => ({ userId: `${prefix}${i}`, token: vigil.token(`${prefix}${i}`) }));
}

let phoneSeq = 0;

/**
 * Two contacts each; answers the rate reached (requests/s), which sizes the arming lead.
 * `owners` (when given) learns whose contact each phone number is.
 */
export async function setContacts(vigil: Vigil, ps: Person[], owners?: Map<string, string>): Promise<number> {
  const t0 = performance.now();
  await pool(ps, CONCURRENCY, async (p, i) => {
    const contacts = [0, 1].map((c) => ({ name: `Contact ${c + 1}`, phone: `+1555${String(phoneSeq++ % 10_000_000).padStart(7, '0')}` }));
    for (const c of contacts) owners?.set(c.phone, p.userId);
    const r = await call(vigil, i, p.token, 'PUT', '/v1/me/contacts', { contacts });
    if (r.status !== 200) throw new Error(`PUT /v1/me/contacts answered ${r.status}: ${JSON.stringify(r.body)}`);
  });
  return ps.length / Math.max(0.001, (performance.now() - t0) / 1000);
}

/**
 * Arm one timer per person so that it falls due at `targets[i]` (epoch ms): the duration is
 * rounded to whole seconds at the moment of the request, so the deadline lands within
 * ±500 ms of the target. With `exact`, each request instead waits for the moment that makes
 * its whole-second duration land on the target (all requests in flight at once: for a few
 * hundred people whose deadlines must really spread, such as the check-ins; rounding alone
 * puts them on one or two instants). A target too close for TIMER_MIN_SECONDS=1 is an
 * error: the caller left too little lead.
 */
export async function armTimers(vigil: Vigil, ps: Person[], targets: number[], o: { exact?: boolean } = {}): Promise<Armed[]> {
  return pool(ps, o.exact ? ps.length : CONCURRENCY, async (p, i) => {
    const target = targets[i] ?? 0;
    if (o.exact) {
      const whole = Math.floor((target - Date.now()) / 1000);
      if (whole >= 1) await new Promise((r) => setTimeout(r, Math.max(0, target - whole * 1000 - Date.now())));
    }
    const durationSeconds = Math.round((target - Date.now()) / 1000);
    if (durationSeconds < 1) throw new Error(`arming fell behind: timer ${i} would be due in ${durationSeconds} s (raise the lead)`);
    const r = await call(vigil, i, p.token, 'POST', '/v1/timers', { durationSeconds, locationName: 'Bench café' });
    const timer = (r.body as { timer?: { id: string; expiresAt: string } } | undefined)?.timer;
    if (r.status !== 201 || !timer) throw new Error(`POST /v1/timers answered ${r.status}: ${JSON.stringify(r.body)}`);
    return { ...p, timerId: timer.id, expiresAt: Date.parse(timer.expiresAt) };
  });
}

/** How long arming `n` timers will take at `rate` requests/s, with room to spare, ms. */
export const armLeadMs = (n: number, rate: number): number => Math.ceil((n / rate) * 2000 + 4000);
