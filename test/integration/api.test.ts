/** The REST contract (docs/api-guide.md, docs/api.md), against a real in-process Vigil. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestVigil, untilPast, type TestVigil } from '../helpers/vigil.js';

let v: TestVigil;
let n = 0;
const user = () => `user-${++n}-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  v = await startTestVigil();
});
afterAll(async () => {
  await v?.stop();
});

describe('auth and errors', () => {
  it('refuses a request without a token with 401 and a machine-readable code', async () => {
    const res = await fetch(`${v.url}/v1/timers`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
  });

  it('refuses a token signed with another secret', async () => {
    const r = await v.api('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.bad', 'GET', '/v1/timers');
    expect(r.status).toBe(401);
  });

  it('invariant 7: a person cannot use the moderator routes (403)', async () => {
    const r = await v.api(v.token(user()), 'GET', '/v1/admin/incidents');
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('forbidden');
  });

  it('rejects unknown fields, wrong types, bad JSON and oversized bodies, and changes nothing', async () => {
    const t = v.token(user());
    const unknown = await v.api(t, 'POST', '/v1/timers', { durationSeconds: 60, colour: 'red' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('validation_failed');
    expect((await v.api(t, 'POST', '/v1/timers', { durationSeconds: '60' })).status).toBe(400);
    const bad = await v.api(t, 'POST', '/v1/timers', '{"durationSeconds":');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('malformed_json');
    const big = await v.api(t, 'POST', '/v1/timers', { durationSeconds: 60, locationName: 'x'.repeat(20_000) });
    expect(big.status).toBe(413);
    expect((await v.api(t, 'POST', '/v1/timers', { durationSeconds: 60, location: { lat: 91, lng: 0 } })).status).toBe(400);
    expect((await v.api(t, 'POST', '/v1/timers', { durationSeconds: 0 })).body.error.code).toBe('out_of_range');
    expect((await v.api(t, 'POST', '/v1/timers', { durationSeconds: 86401 })).body.error.code).toBe('out_of_range');
    const list = await v.api(t, 'GET', '/v1/timers');
    expect(list.body.timers).toEqual([]);
  });

  it('answers unknown routes with 404 route_not_found', async () => {
    const r = await v.api(v.token(user()), 'GET', '/v1/nope');
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('route_not_found');
  });
});

describe('timers', () => {
  it('arms a timer (201) with the fields of the contract', async () => {
    const u = user();
    const r = await v.api(v.token(u), 'POST', '/v1/timers', {
      durationSeconds: 600,
      locationName: 'Blue Bottle',
      location: { lat: 12.9716, lng: 77.5946 },
    });
    expect(r.status).toBe(201);
    const t = r.body.timer;
    expect(t).toMatchObject({
      userId: u,
      status: 'active',
      locationName: 'Blue Bottle',
      location: { lat: 12.9716, lng: 77.5946 },
      extensions: 0,
    });
    expect(Date.parse(t.expiresAt) - Date.parse(t.startedAt)).toBe(600_000);
    expect((await v.api(v.token(u), 'GET', `/v1/timers/${t.id}`)).body.timer).toEqual(t);
  });

  it('invariant 6: the same Idempotency-Key and body returns the same timer; another body is 422', async () => {
    const tok = v.token(user());
    const a = await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 }, { 'Idempotency-Key': 'k-1' });
    const b = await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 }, { 'Idempotency-Key': 'k-1' });
    expect(a.status).toBe(201);
    expect(b.status).toBe(200);
    expect(b.body.timer.id).toBe(a.body.timer.id);
    const c = await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 700 }, { 'Idempotency-Key': 'k-1' });
    expect(c.status).toBe(422);
    expect(c.body.error.code).toBe('idempotency_key_reused');
    expect((await v.api(tok, 'GET', '/v1/timers')).body.timers).toHaveLength(1);
  });

  it('allows only one live timer per person (409 naming the live one)', async () => {
    const tok = v.token(user());
    const a = await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 });
    const b = await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 });
    expect(b.status).toBe(409);
    expect(b.body.error).toMatchObject({ code: 'live_timer_exists', details: { timer: a.body.timer.id, status: 'active' } });
  });

  it("invariant 7: another person's timer is a 404, for reading and for every command", async () => {
    const owner = v.token(user());
    const other = v.token(user());
    const id = (await v.api(owner, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer.id;
    expect((await v.api(other, 'GET', `/v1/timers/${id}`)).status).toBe(404);
    expect((await v.api(other, 'POST', `/v1/timers/${id}/safe`)).status).toBe(404);
    expect((await v.api(other, 'POST', `/v1/timers/${id}/cancel`)).status).toBe(404);
    expect((await v.api(other, 'POST', `/v1/timers/${id}/extend`, { seconds: 60 })).status).toBe(404);
    expect((await v.api(owner, 'GET', `/v1/timers/${id}`)).body.timer.status).toBe('active');
  });

  it('extends before the deadline, then refuses past the extension cap', async () => {
    const tok = v.token(user());
    const t = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    const e = await v.api(tok, 'POST', `/v1/timers/${t.id}/extend`, { seconds: 120 });
    expect(e.status).toBe(200);
    expect(e.body.timer).toMatchObject({ status: 'extended', extensions: 1 });
    expect(Date.parse(e.body.timer.expiresAt) - Date.parse(t.expiresAt)).toBe(120_000);
    expect((await v.api(tok, 'POST', `/v1/timers/${t.id}/extend`, { seconds: 0 })).status).toBe(400);
  });

  it('invariant 6: check-in is idempotent and a resolved timer is never resurrected (409 with the current state)', async () => {
    const tok = v.token(user());
    const id = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer.id;
    const s1 = await v.api(tok, 'POST', `/v1/timers/${id}/safe`);
    const s2 = await v.api(tok, 'POST', `/v1/timers/${id}/safe`);
    expect(s1.body.timer.status).toBe('safe');
    expect(s2.status).toBe(200);
    expect(s2.body.timer).toEqual(s1.body.timer);
    const c = await v.api(tok, 'POST', `/v1/timers/${id}/cancel`);
    expect(c.status).toBe(409);
    expect(c.body.error).toMatchObject({ code: 'timer_wrong_state', details: { status: 'safe' } });
    const e = await v.api(tok, 'POST', `/v1/timers/${id}/extend`, { seconds: 60 });
    expect(e.status).toBe(409);
    expect((await v.api(tok, 'GET', `/v1/timers/${id}`)).body.timer.status).toBe('safe');
    // a new timer can be armed once the old one is resolved
    expect((await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).status).toBe(201);
  });

  it('cancel is idempotent too', async () => {
    const tok = v.token(user());
    const id = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer.id;
    expect((await v.api(tok, 'POST', `/v1/timers/${id}/cancel`)).body.timer.status).toBe('cancelled');
    expect((await v.api(tok, 'POST', `/v1/timers/${id}/cancel`)).status).toBe(200);
    expect((await v.api(tok, 'POST', `/v1/timers/${id}/safe`)).status).toBe(409);
  });

  it('lists my timers by status and since a cursor', async () => {
    const tok = v.token(user());
    const a = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    await v.api(tok, 'POST', `/v1/timers/${a.id}/cancel`);
    const first = await v.api(tok, 'GET', '/v1/timers');
    const b = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    expect((await v.api(tok, 'GET', '/v1/timers?status=cancelled')).body.timers.map((t: { id: string }) => t.id)).toEqual([a.id]);
    const since = await v.api(tok, 'GET', `/v1/timers?since=${encodeURIComponent(first.body.cursor)}`);
    // the cursor trails the store's clock by the store's change lag: `a` may come again, `b` must come
    const again = since.body.timers.map((t: { id: string }) => t.id);
    expect(again).toContain(b.id);
    expect(again.filter((id: string) => id !== a.id)).toEqual([b.id]);
    // an ISO time is still accepted (older clients)
    const byTime = await v.api(tok, 'GET', `/v1/timers?since=${encodeURIComponent(b.updatedAt)}`);
    expect(byTime.status).toBe(200);
    expect(byTime.body.timers).toEqual([]);
    expect((await v.api(tok, 'GET', '/v1/timers?status=bogus')).status).toBe(400);
  });
});

describe('repeats are safe: timer commands with an Idempotency-Key', () => {
  it('invariant 6: a retried extend with the same key extends once and is answered as a replay', async () => {
    const tok = v.token(user());
    const t = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    const first = await v.api(tok, 'POST', `/v1/timers/${t.id}/extend`, { seconds: 300 }, { 'Idempotency-Key': 'ext-1' });
    const retry = await v.api(tok, 'POST', `/v1/timers/${t.id}/extend`, { seconds: 300 }, { 'Idempotency-Key': 'ext-1' });
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.timer).toMatchObject({ id: t.id, extensions: 1, expiresAt: first.body.timer.expiresAt });
    const now = (await v.api(tok, 'GET', `/v1/timers/${t.id}`)).body.timer;
    expect(now.extensions).toBe(1);
    expect(Date.parse(now.expiresAt) - Date.parse(t.expiresAt)).toBe(300_000);
    // without a key, each extend acts, as before
    expect((await v.api(tok, 'POST', `/v1/timers/${t.id}/extend`, { seconds: 60 })).body.timer.extensions).toBe(2);
  });

  it('the key reused with another body, command or timer is 422 idempotency_key_reused and changes nothing', async () => {
    const tok = v.token(user());
    const t = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    expect((await v.api(tok, 'POST', `/v1/timers/${t.id}/extend`, { seconds: 300 }, { 'Idempotency-Key': 'k' })).status).toBe(200);
    const otherBody = await v.api(tok, 'POST', `/v1/timers/${t.id}/extend`, { seconds: 120 }, { 'Idempotency-Key': 'k' });
    expect(otherBody.status).toBe(422);
    expect(otherBody.body.error.code).toBe('idempotency_key_reused');
    expect((await v.api(tok, 'POST', `/v1/timers/${t.id}/safe`, undefined, { 'Idempotency-Key': 'k' })).status).toBe(422);
    const after = (await v.api(tok, 'GET', `/v1/timers/${t.id}`)).body.timer;
    expect(after).toMatchObject({ status: 'extended', extensions: 1 });
  });

  it('invariant 6: a retried cancel with the same key is a replay of the cancelled timer', async () => {
    const tok = v.token(user());
    const t = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    const first = await v.api(tok, 'POST', `/v1/timers/${t.id}/cancel`, undefined, { 'Idempotency-Key': 'c-1' });
    const retry = await v.api(tok, 'POST', `/v1/timers/${t.id}/cancel`, undefined, { 'Idempotency-Key': 'c-1' });
    expect(first.body.timer.status).toBe('cancelled');
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.timer).toEqual(first.body.timer);
    // the key used on this timer is refused on the next one
    const next = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    expect((await v.api(tok, 'POST', `/v1/timers/${next.id}/cancel`, undefined, { 'Idempotency-Key': 'c-1' })).status).toBe(422);
    expect((await v.api(tok, 'GET', `/v1/timers/${next.id}`)).body.timer.status).toBe('active');
  });

  it('an invalid Idempotency-Key on a command is a 400', async () => {
    const tok = v.token(user());
    const t = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    const r = await v.api(tok, 'POST', `/v1/timers/${t.id}/safe`, undefined, { 'Idempotency-Key': 'has space' });
    expect(r.status).toBe(400);
    expect((await v.api(tok, 'GET', `/v1/timers/${t.id}`)).body.timer.status).toBe('active');
  });
});

describe('catching up after a reconnect', () => {
  it('following `cursor` with a small `limit` returns every change (repeats allowed, none skipped)', async () => {
    const tok = v.token(user());
    const start = (await v.api(tok, 'GET', '/v1/timers')).body.cursor as string;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const id = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer.id as string;
      const cancelled = await v.api(tok, 'POST', `/v1/timers/${id}/cancel`);
      ids.push(id);
      // each change in a millisecond of its own: records sharing one beyond a full page need a larger `limit`
      await untilPast(cancelled.body.timer.updatedAt);
    }
    const seen = new Set<string>();
    let cursor = start;
    const giveUp = Date.now() + 15_000;
    for (;;) {
      const r = await v.api(tok, 'GET', `/v1/timers?since=${encodeURIComponent(cursor)}&limit=3`);
      for (const t of r.body.timers as { id: string }[]) seen.add(t.id);
      if (!r.body.more) break;
      // a full page of changes younger than the store's change lag is read again once settled
      if (r.body.cursor === cursor) await new Promise((res) => setTimeout(res, 20));
      cursor = r.body.cursor;
      if (Date.now() > giveUp) throw new Error('the cursor never reached the end');
    }
    expect([...seen].sort()).toEqual([...ids].sort());
  });
});

describe('contacts', () => {
  it('replaces and reads my contacts; refuses non-E.164 numbers and duplicates', async () => {
    const tok = v.token(user());
    const put = await v.api(tok, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Bob', phone: '+14155550123' }] });
    expect(put.status).toBe(200);
    expect(put.body.contacts).toEqual([{ id: expect.stringMatching(/^c_/), name: 'Bob', phone: '+14155550123', state: 'pending' }]);
    expect((await v.api(tok, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Bob', phone: '4155550123' }] })).status).toBe(400);
    const dup = [
      { name: 'A', phone: '+14155550123' },
      { name: 'B', phone: '+14155550123' },
    ];
    expect((await v.api(tok, 'PUT', '/v1/me/contacts', { contacts: dup })).status).toBe(400);
    const six = Array.from({ length: 6 }, (_, i) => ({ name: `c${i}`, phone: `+1415555010${i}` }));
    expect((await v.api(tok, 'PUT', '/v1/me/contacts', { contacts: six })).status).toBe(400);
    expect((await v.api(tok, 'GET', '/v1/me/contacts')).body.contacts).toEqual(put.body.contacts);
  });
});

describe('SOS end to end (embedded)', () => {
  it('a missed deadline opens one incident, texts every contact (simulated), and moderators can ack and resolve it', async () => {
    const u = user();
    const tok = v.token(u, { name: 'Asha' });
    const mod = v.token('mod-1', { admin: true });
    await v.api(tok, 'PUT', '/v1/me/contacts', {
      contacts: [
        { name: 'Bob', phone: '+14155550123' },
        { name: 'Eve', phone: '+919812345678' },
      ],
    });
    const t = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 1, locationName: 'Cafe', location: { lat: 1, lng: 2 } })).body
      .timer;
    const inc = await eventually(async () => {
      const r = await v.api(mod, 'GET', '/v1/admin/incidents');
      const found = r.body.incidents.find((i: { timerId: string }) => i.timerId === t.id);
      return found?.deliveries.length === 2 && found.deliveries.every((d: { status: string }) => d.status === 'sent') ? found : undefined;
    }, 'incident with 2 sent deliveries');
    expect(inc).toMatchObject({ status: 'active', userId: u, displayName: 'Asha', locationName: 'Cafe' });
    expect(inc.deliveries.map((d: { carrier: string }) => d.carrier)).toEqual(['console', 'console']);
    const timer = (await v.api(tok, 'GET', `/v1/timers/${t.id}`)).body.timer;
    expect(timer).toMatchObject({ status: 'expired', incidentId: inc.id });

    const ack = await v.api(mod, 'POST', `/v1/admin/incidents/${inc.id}/ack`);
    expect(ack.body.incident).toMatchObject({ status: 'acknowledged', acknowledgedBy: 'mod-1' });
    expect((await v.api(mod, 'POST', `/v1/admin/incidents/${inc.id}/ack`)).status).toBe(200);
    const res = await v.api(mod, 'POST', `/v1/admin/incidents/${inc.id}/resolve`);
    expect(res.body.incident.status).toBe('resolved');
    expect((await v.api(mod, 'POST', `/v1/admin/incidents/${inc.id}/ack`)).status).toBe(409);
    expect((await v.api(mod, 'GET', '/v1/admin/incidents?status=resolved')).body.incidents.map((i: { id: string }) => i.id)).toContain(
      inc.id,
    );
  });

  it("I'm safe after the SOS: the timer stays expired, the incident is a false alarm, each contact gets an all-clear", async () => {
    const tok = v.token(user(), { name: 'Ravi' });
    const mod = v.token('mod-2', { admin: true });
    await v.api(tok, 'PUT', '/v1/me/contacts', {
      contacts: [
        { name: 'Bob', phone: '+14155550123' },
        { name: 'Eve', phone: '+919812345678' },
      ],
    });
    const t = (await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer;
    await eventually(async () => (await v.api(tok, 'GET', `/v1/timers/${t.id}`)).body.timer.incidentId, 'escalation');
    const safe = await v.api(tok, 'POST', `/v1/timers/${t.id}/safe`);
    expect(safe.status).toBe(200);
    expect(safe.body.timer.status).toBe('expired');
    expect(safe.body.incident.status).toBe('false_alarm');
    const again = await v.api(tok, 'POST', `/v1/timers/${t.id}/safe`);
    expect(again.body.incident.status).toBe('false_alarm');
    const inc = await eventually(async () => {
      const r = await v.api(mod, 'GET', `/v1/admin/incidents/${safe.body.incident.id}`);
      const ds = r.body.incident.deliveries as { kind: string; status: string }[];
      return ds.filter((d) => d.kind === 'all_clear' && d.status === 'sent').length === 2 ? r.body.incident : undefined;
    }, 'two all-clear messages sent');
    expect(inc.deliveries.filter((d: { kind: string }) => d.kind === 'sos')).toHaveLength(2);
    expect(inc.deliveries).toHaveLength(4);
  });
});
