/**
 * One open SOS per person (issue 35, items 1, 3, 4), as a new user would meet it over REST only,
 * against a real in-process Vigil (SQLite), sweeps and dispatches by hand, a recording carrier:
 *   - a second SOS while one is open (a panic, or another timer running out) joins it: no second
 *     incident, nobody texted twice, moderators told; every timer linked to it can check in and
 *     post fixes, and the moderators' trail covers them all;
 *   - a panic with `{}` while fixes flow carries the latest fix ("Last seen … at <it>");
 *   - a panic with no timer takes live fixes and can be ended by the person ("I'm safe" on the
 *     incident: false alarm, all-clear after the SOS);
 *   - the panic note reaches moderators, survives attaching and the crash repair;
 *   - POST /v1/sos is in the check-in budget: the person's own traffic never refuses it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mapLink } from '../../src/domain/messages.js';
import { RecordingCarrier } from '../helpers/recording-carrier.js';
import { connect, type Recorder } from '../helpers/sockets.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { armWithContacts, dispatchRound, expireAndSweep } from './sms-support.js';

const M = 1 / 111_195; // a metre of latitude in degrees
const HOME = { lat: 48.8566, lng: 2.3522 };
const north = (m: number) => ({ lat: HOME.lat + m * M, lng: HOME.lng });

let v: TestVigil;
let mod: Recorder;
const carrier = new RecordingCarrier();
const modToken = () => v.token('mod-one-sos', { admin: true });
let n = 0;
const phone = () => `+1415556${String(1000 + ++n).padStart(4, '0')}`;
const sentTo = (to: string) => carrier.sent.filter((s) => s.to === to);

beforeAll(async () => {
  v = await startTestVigil({ LOCATION_MIN_INTERVAL_SECONDS: '0', LOCATION_MAX_PER_MINUTE: '1000' }, { manualTicks: true, carrier });
  mod = await connect(v.url, modToken());
});
afterAll(async () => {
  mod?.close();
  await v?.stop();
});

/** The person's first timer expired and its SOS open (acknowledged by a moderator, not resolved). */
async function openSos(user: string, phones: string[]) {
  const a = await armWithContacts(v, user, phones, { durationSeconds: 1, location: HOME }, user);
  await expireAndSweep(v, a.expiresAt);
  const t1 = (await v.api(a.token, 'GET', `/v1/timers/${a.timerId}`)).body.timer;
  const incidentId = t1.incidentId as string;
  expect(incidentId).toBeTruthy();
  expect((await v.api(modToken(), 'POST', `/v1/admin/incidents/${incidentId}/ack`)).status).toBe(200);
  await dispatchRound(v);
  return { token: a.token, t1: a.timerId, incidentId };
}

const incidentView = async (id: string) => (await v.api(modToken(), 'GET', `/v1/admin/incidents/${id}`)).body.incident;

describe('one open SOS per person', () => {
  it('invariant 3 (one open SOS per person): a panic while an incident is open joins it; the new timer checks in (2xx) and posts fixes; the trail covers both timers', async () => {
    const p = phone();
    const s = await openSos('one-sos-ann', [p]);
    const t1Fix = await v.api(s.token, 'POST', `/v1/timers/${s.t1}/location`, north(50));
    expect(t1Fix.status).toBe(200);
    expect(t1Fix.body).toMatchObject({ kept: true, incidentId: s.incidentId });

    // a new timer, then the panic button
    const t2 = (await v.api(s.token, 'POST', '/v1/timers', { durationSeconds: 600, location: HOME })).body.timer;
    const press = await v.api(s.token, 'POST', '/v1/sos', {});
    expect(press.status).toBe(200);
    expect(press.body).toMatchObject({ attached: true, incident: { id: s.incidentId, linkedTimerIds: [t2.id] } });
    expect(press.body.incident.sources).toEqual(['timer', 'panic']);

    // the new timer is linked to the open incident: fixes are taken, for that incident
    const t2Fix = await v.api(s.token, 'POST', `/v1/timers/${t2.id}/location`, north(900));
    expect(t2Fix.status).toBe(200);
    expect(t2Fix.body).toMatchObject({ kept: true, incidentId: s.incidentId });
    const trail = await v.api(modToken(), 'GET', `/v1/admin/incidents/${s.incidentId}/locations`);
    expect(trail.body.fixes.map((f: { lat: number }) => f.lat)).toEqual(expect.arrayContaining([north(50).lat, north(900).lat]));

    // nobody was texted twice (one SOS; the far fix sent the one `moved` follow-up); I'm safe on the new timer ends it
    await dispatchRound(v);
    const kinds = () => sentTo(p).map((m) => m.idempotencyKey.split(':')[2] ?? 'sos');
    expect(kinds()).toEqual(['sos', 'moved']);
    const safe = await v.api(s.token, 'POST', `/v1/timers/${t2.id}/safe`);
    expect(safe.status).toBe(200);
    expect(safe.body.incident).toMatchObject({ id: s.incidentId, status: 'false_alarm' });
    await dispatchRound(v);
    expect(kinds()).toEqual(['sos', 'moved', 'all_clear']);
  });

  it('invariant 3: a second timer running out while the first SOS is open joins it: no second incident, no second text, moderators told', async () => {
    const p = phone();
    const s = await openSos('one-sos-ben', [p]);
    const t2 = (await v.api(s.token, 'POST', '/v1/timers', { durationSeconds: 1, location: HOME })).body.timer;
    await expireAndSweep(v, Date.parse(t2.expiresAt));
    const after = (await v.api(s.token, 'GET', `/v1/timers/${t2.id}`)).body.timer;
    expect(after).toMatchObject({ status: 'expired', incidentId: s.incidentId });
    const mine = (await v.api(modToken(), 'GET', '/v1/admin/incidents?limit=500')).body.incidents.filter(
      (i: { userId: string }) => i.userId === 'one-sos-ben',
    );
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ id: s.incidentId, linkedTimerIds: [t2.id] });
    await eventually(
      async () => mod.named('incident.updated').some((e) => e.eventId === `incident.updated:${s.incidentId}:joined:${t2.id}`),
      'moderators told that the timer joined',
    );
    await dispatchRound(v);
    expect(sentTo(p)).toHaveLength(1);
    expect((await v.api(s.token, 'POST', `/v1/timers/${t2.id}/safe`)).status).toBe(200);
    expect((await incidentView(s.incidentId)).status).toBe('false_alarm');
  });

  it('a panic with {} while fixes flow carries the latest fix: the incident’s place and "Last seen … at" in the text', async () => {
    const p = phone();
    const a = await armWithContacts(v, 'one-sos-cat', [p], { durationSeconds: 600, location: HOME }, 'Cat');
    for (const m of [100, 400, 800]) expect((await v.api(a.token, 'POST', `/v1/timers/${a.timerId}/location`, north(m))).status).toBe(200);
    const press = await v.api(a.token, 'POST', '/v1/sos', {});
    expect(press.status).toBe(201);
    expect(press.body.incident.location).toEqual(north(800));
    // the timer ended with the press; its buffered fixes are in the store
    await eventually(async () => (await v.vigil.store.listFixes(a.timerId, 10)).length === 3, 'the buffered fixes stored');
    await dispatchRound(v);
    const [sos] = sentTo(p);
    expect(sos?.body).toContain(`Last seen just now at ${mapLink(north(800))}`);
    expect(sos?.body).not.toContain(mapLink(HOME));
  });

  it('a panic with no timer takes live fixes and the person ends it: "I\'m safe" on the incident → false alarm, all-clear after the SOS', async () => {
    const p = phone();
    const token = v.token('one-sos-dan', { name: 'Dan' });
    await v.api(token, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Kim', phone: p }] });
    const press = await v.api(token, 'POST', '/v1/sos', { note: 'he has a knife' });
    expect(press.status).toBe(201);
    const id = press.body.incident.id as string;
    const fix = await v.api(token, 'POST', `/v1/incidents/${id}/location`, north(300));
    expect(fix.status).toBe(200);
    expect(fix.body).toMatchObject({ kept: true, incidentId: id });
    const trail = await v.api(modToken(), 'GET', `/v1/admin/incidents/${id}/locations`);
    expect(trail.body.fixes).toMatchObject([{ lat: north(300).lat }]);
    // nobody else may post for it, end it, or learn it exists
    const eve = v.token('one-sos-eve');
    expect((await v.api(eve, 'POST', `/v1/incidents/${id}/location`, north(1))).status).toBe(404);
    expect((await v.api(eve, 'POST', `/v1/incidents/${id}/safe`)).status).toBe(404);
    await dispatchRound(v);
    expect(sentTo(p)).toHaveLength(1);
    const safe = await v.api(token, 'POST', `/v1/incidents/${id}/safe`);
    expect(safe.status).toBe(200);
    expect(safe.body.incident).toMatchObject({ id, status: 'false_alarm' });
    expect((await v.api(token, 'POST', `/v1/incidents/${id}/safe`)).body.incident.status).toBe('false_alarm'); // a repeat
    await dispatchRound(v);
    expect(sentTo(p).map((m) => m.idempotencyKey.endsWith(':all_clear'))).toEqual([false, true]);
    expect((await v.api(token, 'POST', `/v1/incidents/${id}/location`, north(600))).status).toBe(409);
  });

  it('the panic note reaches moderators, also from a press that attaches to an open incident', async () => {
    const s = await openSos('one-sos-fay', [phone()]);
    const press = await v.api(s.token, 'POST', '/v1/sos', { note: 'car: grey van, plate 4XYZ123' });
    expect(press.status).toBe(200);
    const view = await incidentView(s.incidentId);
    expect(view.panicNotes).toMatchObject([{ text: 'car: grey van, plate 4XYZ123' }]);
    // a second press with another note (the source is there already, no timer to link): moderators get it live
    expect((await v.api(s.token, 'POST', '/v1/sos', { note: 'going north on 5th' })).status).toBe(200);
    await eventually(
      async () =>
        mod
          .named('incident.updated')
          .some((e) => (e.incident as { id: string; panicNotes?: { text: string }[] }).panicNotes?.at(-1)?.text === 'going north on 5th'),
      'the second note at moderators, live',
    );
  });

  it('the crash repair of a panic’s texts keeps its note (the request died before the texts were queued)', async () => {
    const p = phone();
    const token = v.token('one-sos-gus', { name: 'Gus' });
    await v.api(token, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Lee', phone: p }] });
    // what the request wrote before dying: the incident, its texts still owed
    const r = await v.vigil.store.raisePanic({
      incidentId: 'inc-gus-crash',
      userId: 'one-sos-gus',
      displayName: 'Gus',
      note: 'behind the bar',
    });
    expect(r.kind).toBe('created');
    expect((await v.vigil.store.getIncident('inc-gus-crash'))?.panicTexts).toBe('pending');
    await v.vigil.sweeper.sweep();
    await dispatchRound(v);
    expect(sentTo(p)[0]?.body).toContain('Their note: "behind the bar"');
  });
});

describe('the panic button’s budget', () => {
  let limited: TestVigil;
  beforeAll(async () => {
    limited = await startTestVigil(
      { RATE_LIMIT_PER_PERSON: '4', RATE_LIMIT_CHECKINS_PER_PERSON: '4', RATE_LIMIT_WINDOW_MS: '60000', RATE_LIMIT_HOLD_MS: '0' },
      { manualTicks: true, carrier },
    );
  });
  afterAll(async () => {
    await limited?.stop();
  });

  it('invariant 8: POST /v1/sos is in the check-in budget: the person’s own flood of other routes never refuses it', async () => {
    const token = limited.token('one-sos-hal');
    const codes: number[] = [];
    for (let i = 0; i < 6; i++) codes.push((await limited.api(token, 'GET', '/v1/timers')).status);
    expect(codes.slice(-2)).toEqual([429, 429]);
    expect((await limited.api(token, 'POST', '/v1/sos', {})).status).toBe(201);
  });
});
