/**
 * Live location over REST and Socket.IO against a real in-process Vigil (embedded: SQLite
 * store, in-memory latest-fix cache), sweeps and dispatches driven by hand.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mapLink } from '../../src/domain/messages.js';
import { RecordingCarrier } from '../helpers/recording-carrier.js';
import { connect } from '../helpers/sockets.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { armWithContacts, dispatchRound, expireAndSweep, incidentOf } from './sms-support.js';

const M = 1 / 111_195; // one metre of latitude in degrees
const HOME = { lat: 52.52, lng: 13.405 };
const north = (m: number) => ({ lat: HOME.lat + m * M, lng: HOME.lng });

let v: TestVigil;
const carrier = new RecordingCarrier();
beforeAll(async () => {
  // no rate interval here (the rate cases run on their own instance); a small follow-up distance
  v = await startTestVigil(
    { LOCATION_MIN_INTERVAL_SECONDS: '0', LOCATION_MAX_PER_MINUTE: '1000', LOCATION_FOLLOWUP_METERS: '500' },
    { manualTicks: true, carrier },
  );
});
afterAll(async () => {
  await v?.stop();
});

const post = (token: string, timerId: string, body: unknown) => v.api(token, 'POST', `/v1/timers/${timerId}/location`, body);

describe('POST /v1/timers/:id/location', () => {
  it('keeps the first fix, drops one under 10 m from the last kept fix, keeps one farther', async () => {
    const alice = v.token('loc-alice');
    const t = (await v.api(alice, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    const first = await post(alice, t.id, { ...HOME, accuracyM: 8 });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ kept: true, fix: { ...HOME, accuracyM: 8 } });
    const near = await post(alice, t.id, north(6));
    expect(near.status).toBe(200);
    expect(near.body).toMatchObject({ kept: false, reason: 'too_close' });
    // still measured from the last KEPT fix: 6 m + 6 m from the first is 12 m
    expect((await post(alice, t.id, north(12))).body.kept).toBe(true);
    expect((await post(alice, t.id, north(15))).body.kept).toBe(false);

    const trail = await v.api(alice, 'GET', `/v1/timers/${t.id}/locations`);
    expect(trail.status).toBe(200);
    expect(trail.body.fixes.map((f: { lat: number }) => f.lat)).toEqual([HOME.lat, north(12).lat]);
    await v.api(alice, 'POST', `/v1/timers/${t.id}/cancel`);
  });

  it('invariant 7: only the owner posts and reads a timer’s fixes (404 for anyone else)', async () => {
    const alice = v.token('loc-owner');
    const bob = v.token('loc-other');
    const t = (await v.api(alice, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    const r = await post(bob, t.id, HOME);
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('timer_not_found');
    expect((await v.api(bob, 'GET', `/v1/timers/${t.id}/locations`)).status).toBe(404);
    expect((await post(alice, t.id, HOME)).status).toBe(200);
    await v.api(alice, 'POST', `/v1/timers/${t.id}/cancel`);
  });

  it('refuses a timer that is not live (409) and bad fixes (400) without changing anything', async () => {
    const alice = v.token('loc-bad');
    const t = (await v.api(alice, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    for (const [body, code] of [
      [{ lat: 91, lng: 0 }, 'validation_failed'],
      [{ lat: 0, lng: 181 }, 'validation_failed'],
      [{ lat: 0 }, 'validation_failed'],
      [{ lat: 0, lng: 0, extra: 1 }, 'validation_failed'],
      [{ lat: 0, lng: 0, accuracyM: -1 }, 'validation_failed'],
      [{ lat: 0, lng: 0, at: 'yesterday' }, 'validation_failed'],
      [{ lat: 0, lng: 0, at: new Date(Date.now() + 3_600_000).toISOString() }, 'fix_in_future'],
      [{ lat: 0, lng: 0, at: new Date(Date.parse(t.startedAt) - 60_000).toISOString() }, 'fix_before_timer'],
    ] as const) {
      const r = await post(alice, t.id, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.code).toBe(code);
    }
    expect((await v.api(alice, 'GET', `/v1/timers/${t.id}/locations`)).body.fixes).toEqual([]);
    await v.api(alice, 'POST', `/v1/timers/${t.id}/cancel`);
    const late = await post(alice, t.id, HOME);
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('timer_not_live');
  });

  it('flushes the fixes to the store when the timer ends, and on the periodic flush', async () => {
    const alice = v.token('loc-flush');
    const t = (await v.api(alice, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    await post(alice, t.id, HOME);
    await post(alice, t.id, north(100));
    expect(await v.vigil.store.listFixes(t.id, 10)).toEqual([]); // buffered until a flush
    await v.vigil.location.flushAll();
    expect(await v.vigil.store.listFixes(t.id, 10)).toHaveLength(1 + 1);
    await post(alice, t.id, north(300));
    await v.api(alice, 'POST', `/v1/timers/${t.id}/safe`);
    await eventually(async () => (await v.vigil.store.listFixes(t.id, 10)).length === 3, 'the fix flushed when the timer ended');
  });
});

describe('whom they are meeting', () => {
  it('is validated, stored on the timer, shown to moderators on the incident and not sent to contacts by default', async () => {
    const bad = await v.api(v.token('meet-bad'), 'POST', '/v1/timers', { durationSeconds: 600, meeting: { phone: '0123' } });
    expect(bad.status).toBe(400);
    expect((await v.api(v.token('meet-bad'), 'POST', '/v1/timers', { durationSeconds: 600, meeting: {} })).status).toBe(400);
    expect((await v.api(v.token('meet-bad'), 'POST', '/v1/timers', { durationSeconds: 600, meeting: { name: '\u202e ' } })).status).toBe(
      400,
    );

    const { token, timerId, expiresAt } = await armWithContacts(v, 'meet-alice', ['+14155550150'], {
      durationSeconds: 1,
      meeting: { name: 'Bob from the app', phone: '+14155550177', withUserId: 'user-bob' },
    } as never);
    const own = await v.api(token, 'GET', `/v1/timers/${timerId}`);
    expect(own.body.timer.meeting).toEqual({ name: 'Bob from the app', phone: '+14155550177', withUserId: 'user-bob' });
    await expireAndSweep(v, expiresAt);
    const incident = await incidentOf(v, timerId);
    expect((incident as unknown as { meeting: unknown }).meeting).toEqual({
      name: 'Bob from the app',
      phone: '+14155550177',
      withUserId: 'user-bob',
    });
    await dispatchRound(v);
    const body = carrier.sent.find((s) => s.idempotencyKey === `${incident.id}:${incident.deliveries[0]?.contactId}`)?.body;
    expect(body).toBeDefined();
    expect(body).not.toContain('Bob');
    expect(body).not.toContain('+14155550177');
  });
});

describe('after the SOS', () => {
  it('the SOS text carries the freshest fix; moderators read the trail; one moved text per contact, once', async () => {
    const armed = { lat: 48.8584, lng: 2.2945 };
    const { token, timerId, expiresAt } = await armWithContacts(v, 'sos-alice', ['+14155550160', '+14155550161'], {
      durationSeconds: 2,
      location: armed,
    });
    const mod = v.token('sos-mod', { admin: true });
    const moved = { lat: 48.8606, lng: 2.3376 }; // ~3 km away
    expect((await post(token, timerId, moved)).body.kept).toBe(true);
    await expireAndSweep(v, expiresAt);
    const incident = await incidentOf(v, timerId);
    await dispatchRound(v);
    const sos = carrier.sent.filter((s) => s.idempotencyKey.startsWith(`${incident.id}:`));
    expect(sos).toHaveLength(2);
    for (const s of sos) {
      expect(s.body).toContain(`Last seen just now at ${mapLink(moved)}`);
      expect(s.body).not.toContain(mapLink(armed));
    }
    // the incident says where the SOS said the person was
    expect((incident as unknown as { location: unknown }).location).toEqual(moved);

    // while the incident is open the person keeps posting; moderators read the trail
    const afar = { lat: moved.lat + 1000 * M, lng: moved.lng };
    const r = await post(token, timerId, afar);
    expect(r.body).toMatchObject({ kept: true, incidentId: incident.id });
    const trail = await v.api(mod, 'GET', `/v1/admin/incidents/${incident.id}/locations`);
    expect(trail.status).toBe(200);
    expect(trail.body.fixes.map((f: { lat: number }) => f.lat)).toEqual([moved.lat, afar.lat]);
    expect((await v.api(token, 'GET', `/v1/admin/incidents/${incident.id}/locations`)).status).toBe(403);

    // one moved follow-up per contact, whatever comes next
    await post(token, timerId, { lat: afar.lat + 2000 * M, lng: afar.lng });
    await dispatchRound(v);
    const withMoved = await incidentOf(v, timerId);
    const kinds = withMoved.deliveries.map((d) => d.kind as string).sort();
    expect(kinds).toEqual(['moved', 'moved', 'sos', 'sos']);
    const movedTexts = carrier.sent.filter((s) => s.idempotencyKey.startsWith(`${incident.id}:`) && s.idempotencyKey.endsWith(':moved'));
    expect(movedTexts).toHaveLength(2);
    expect(movedTexts[0]?.body).toContain(mapLink(afar));
    // after the incident closes, moderators no longer read fixes
    await v.api(mod, 'POST', `/v1/admin/incidents/${incident.id}/resolve`);
    expect((await v.api(mod, 'GET', `/v1/admin/incidents/${incident.id}/locations`)).body.fixes).toEqual([]);
    expect((await post(token, timerId, HOME)).status).toBe(409);
  });

  it('moderators read the trails of many incidents in one request: each as its own route answers it, unknown ids left out, bounded', async () => {
    const mod = v.token('trails-mod', { admin: true });
    const open: { id: string; lat: number }[] = [];
    for (let n = 0; n < 3; n++) {
      const person = v.token(`trails-${n}`);
      const raised = await v.api(person, 'POST', '/v1/sos', {});
      expect(raised.status).toBe(201);
      const id = String(raised.body.incident.id);
      const lat = 10 + n;
      expect((await v.api(person, 'POST', `/v1/incidents/${id}/location`, { lat, lng: 20 })).status).toBe(200);
      open.push({ id, lat });
    }
    const closed = open[2]!;
    await v.api(mod, 'POST', `/v1/admin/incidents/${closed.id}/resolve`);

    const ids = [...open.map((o) => o.id), 'no-such-incident', open[0]!.id].join(',');
    const r = await v.api(mod, 'GET', `/v1/admin/incidents/locations?ids=${ids}`);
    expect(r.status).toBe(200);
    const byId = new Map((r.body.trails as { incidentId: string; fixes: { lat: number }[] }[]).map((t) => [t.incidentId, t]));
    expect([...byId.keys()].sort()).toEqual(open.map((o) => o.id).sort());
    expect(r.body.trails).toHaveLength(3);
    for (const o of open) {
      const single = await v.api(mod, 'GET', `/v1/admin/incidents/${o.id}/locations`);
      expect(byId.get(o.id)).toEqual(single.body);
    }
    expect(byId.get(open[0]!.id)?.fixes.map((f) => f.lat)).toEqual([open[0]!.lat]);
    expect(byId.get(closed.id)?.fixes).toEqual([]);

    // moderators only; at most 100 ids; no empty list
    expect((await v.api(v.token('trails-0'), 'GET', `/v1/admin/incidents/locations?ids=${open[0]!.id}`)).status).toBe(403);
    const tooMany = Array.from({ length: 101 }, (_, i) => `inc_${i}`).join(',');
    expect((await v.api(mod, 'GET', `/v1/admin/incidents/locations?ids=${tooMany}`)).body.error.code).toBe('validation_failed');
    expect((await v.api(mod, 'GET', '/v1/admin/incidents/locations')).status).toBe(400);
    for (const o of open.slice(0, 2)) await v.api(mod, 'POST', `/v1/admin/incidents/${o.id}/resolve`);
  });

  it('a moved text is not created for a move under the follow-up distance', async () => {
    const armed = { lat: 40.0, lng: -74.0 };
    const { token, timerId, expiresAt } = await armWithContacts(v, 'sos-near', ['+14155550170'], { durationSeconds: 1, location: armed });
    await expireAndSweep(v, expiresAt);
    const incident = await incidentOf(v, timerId);
    expect((await post(token, timerId, { lat: armed.lat + 200 * M, lng: armed.lng })).body.kept).toBe(true);
    expect((await incidentOf(v, timerId)).deliveries.map((d) => d.kind)).toEqual(['sos']);
    await v.api(v.token('m', { admin: true }), 'POST', `/v1/admin/incidents/${incident.id}/resolve`);
  });
});

describe('socket', () => {
  it('location.fix answers with an ack; location.updated goes to the owner, and to moderators only after the SOS', async () => {
    const { token, timerId, expiresAt } = await armWithContacts(v, 'sock-alice', ['+14155550180'], { durationSeconds: 2 });
    const owner = await connect(v.url, token);
    const mod = await connect(v.url, v.token('sock-mod', { admin: true }));
    const stranger = await connect(v.url, v.token('sock-bob'));
    try {
      const ack = (await owner.socket.timeout(5000).emitWithAck('location.fix', { timerId, ...HOME, accuracyM: 5 })) as Record<
        string,
        unknown
      >;
      expect(ack).toMatchObject({ ok: true, kept: true, fix: { ...HOME, accuracyM: 5 } });
      const near = (await owner.socket.timeout(5000).emitWithAck('location.fix', { timerId, ...north(3) })) as Record<string, unknown>;
      expect(near).toMatchObject({ ok: true, kept: false, reason: 'too_close' });
      const bad = (await owner.socket.timeout(5000).emitWithAck('location.fix', { timerId, lat: 100, lng: 0 })) as {
        ok: boolean;
        error: { code: string };
      };
      expect(bad).toMatchObject({ ok: false, error: { code: 'validation_failed' } });
      const foreign = (await stranger.socket.timeout(5000).emitWithAck('location.fix', { timerId, ...north(50) })) as {
        error: { code: string };
      };
      expect(foreign.error.code).toBe('timer_not_found');

      await eventually(async () => owner.named('location.updated').length === 1, 'location.updated at the owner');
      expect(mod.named('location.updated')).toEqual([]);

      await expireAndSweep(v, expiresAt);
      const incident = await incidentOf(v, timerId);
      const after = (await owner.socket.timeout(5000).emitWithAck('location.fix', { timerId, ...north(80) })) as Record<string, unknown>;
      expect(after).toMatchObject({ ok: true, kept: true, incidentId: incident.id });
      const seen = await eventually(async () => mod.named('location.updated')[0], 'location.updated at the moderator');
      expect(seen).toMatchObject({ timerId, incidentId: incident.id, fix: { lat: north(80).lat, lng: HOME.lng } });
      expect(typeof seen.eventId).toBe('string');
      await eventually(async () => owner.named('location.updated').length === 2, 'the owner sees it too');
      // invariant 7: a stranger never sees fixes
      expect(stranger.named('location.updated')).toEqual([]);
      await v.api(v.token('m', { admin: true }), 'POST', `/v1/admin/incidents/${incident.id}/resolve`);
    } finally {
      owner.close();
      mod.close();
      stranger.close();
    }
  });
});

describe('rate limit', () => {
  let r: TestVigil;
  beforeAll(async () => {
    r = await startTestVigil({ LOCATION_MIN_INTERVAL_SECONDS: '30', LOCATION_MAX_PER_MINUTE: '3' }, { manualTicks: true });
  });
  afterAll(async () => {
    await r?.stop();
  });

  it('429 rate_limited with Retry-After: one kept fix per interval, a budget of posts per minute', async () => {
    const alice = r.token('rate-alice');
    const t = (await r.api(alice, 'POST', '/v1/timers', { durationSeconds: 600 })).body.timer;
    const p = (body: unknown) => r.api(alice, 'POST', `/v1/timers/${t.id}/location`, body);
    expect((await p(HOME)).body.kept).toBe(true);
    const tooSoon = await p(north(500));
    expect(tooSoon.status).toBe(429);
    expect(tooSoon.body.error.code).toBe('rate_limited');
    const wait = Number(tooSoon.headers['retry-after']);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(30);
    // nothing changed: the trail still has the first fix only
    await r.vigil.location.flushAll();
    expect(await r.vigil.store.listFixes(t.id, 10)).toHaveLength(1);
    const text = await r.vigil.metrics.registry.metrics();
    expect(text).toMatch(/^vigil_location_fixes_total\{[^}]*outcome="rate_limited"[^}]*\} 1$/m);
    expect(text).toMatch(/^vigil_location_fixes_total\{[^}]*outcome="kept"[^}]*\} 1$/m);
  });
});

describe('SOS_INCLUDE_MEETING=true', () => {
  let w: TestVigil;
  const rec = new RecordingCarrier();
  beforeAll(async () => {
    w = await startTestVigil({ SOS_INCLUDE_MEETING: 'true' }, { manualTicks: true, carrier: rec });
  });
  afterAll(async () => {
    await w?.stop();
  });

  it('the SOS text says whom the person was meeting (the name only, sanitised)', async () => {
    const { timerId, expiresAt } = await armWithContacts(w, 'meet-on', ['+14155550190'], {
      durationSeconds: 1,
      meeting: { name: 'Bob (bob.example.com)', phone: '+14155550177' },
    } as never);
    await expireAndSweep(w, expiresAt);
    const incident = await incidentOf(w, timerId);
    await dispatchRound(w);
    const body = rec.sent.find((s) => s.idempotencyKey.startsWith(`${incident.id}:`))?.body ?? '';
    expect(body).toContain('(meeting Bob (bob[.]example[.]com))');
    expect(body).not.toContain('+14155550177');
  });
});
