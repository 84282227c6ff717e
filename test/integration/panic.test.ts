/** The panic button over REST and Socket.IO, against a real in-process Vigil (SQLite). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Recorder } from '../helpers/sockets.js';
import { eventually, startTestVigil, untilPast, type TestVigil } from '../helpers/vigil.js';

let v: TestVigil;
let mod: Recorder;
const modToken = () => v.token('mod-panic', { admin: true });

beforeAll(async () => {
  v = await startTestVigil({}, { manualTicks: true });
  mod = await connect(v.url, modToken());
});
afterAll(async () => {
  mod?.close();
  await v?.stop();
});

const contacts = async (token: string, n = 2) =>
  v.api(token, 'PUT', '/v1/me/contacts', {
    contacts: Array.from({ length: n }, (_, i) => ({
      name: `C${i}`,
      phone: `+1415555${String(2000 + i + Math.floor(Math.random() * 7000))}`,
    })),
  });
const deliveriesOf = async (id: string) =>
  (await v.api(modToken(), 'GET', `/v1/admin/incidents/${id}`)).body.incident.deliveries as unknown[];

describe('POST /v1/sos', () => {
  it('raises an incident at once (source panic, no timer), texts every contact, tells the person and the moderators', async () => {
    const ann = v.token('ann-panic', { name: 'Ann' });
    await contacts(ann, 2);
    const me = await connect(v.url, ann);
    try {
      const r = await v.api(ann, 'POST', '/v1/sos', {
        location: { lat: 37.8, lng: -122.4 },
        locationName: 'Pier 39',
        note: 'he is following me',
      });
      expect(r.status).toBe(201);
      expect(r.body.attached).toBe(false);
      const inc = r.body.incident;
      expect(inc).toMatchObject({ userId: 'ann-panic', status: 'active', source: 'panic', sources: ['panic'], locationName: 'Pier 39' });
      expect(inc.timerId).toBeUndefined();
      expect(await deliveriesOf(inc.id)).toHaveLength(2);
      expect((await v.vigil.store.getIncident(inc.id))?.panicTexts).toBe('done');
      await eventually(
        async () => me.named('sos.triggered').some((p) => (p.incident as { id: string }).id === inc.id),
        'sos.triggered at the owner',
      );
      await eventually(
        async () => mod.named('sos.triggered').some((p) => (p.incident as { id: string }).id === inc.id),
        'sos.triggered at moderators',
      );
      // the texts go out; the first one sent tells the person their contacts were texted (once)
      await v.vigil.dispatcher.tick();
      await eventually(async () => me.named('notification.created').length === 1, 'notification.created');
      const inbox = (await v.api(ann, 'GET', '/v1/me/notifications')).body.notifications;
      expect(inbox).toMatchObject([{ kind: 'contacts_texted', incidentId: inc.id }]);
      const [d] = await v.vigil.store.deliveriesFor([inc.id]);
      expect(d?.body).toMatch(/Ann pressed the panic button at Pier 39 .*maps\.google\.com.*Their note: "he is following me"/);
    } finally {
      me.close();
    }
  });

  it('same Idempotency-Key → the same incident (replayed, no second texts); another body with it → 422', async () => {
    const bo = v.token('bo-panic');
    await contacts(bo, 1);
    const first = await v.api(bo, 'POST', '/v1/sos', {}, { 'Idempotency-Key': 'sos-bo-1' });
    expect(first.status).toBe(201);
    const again = await v.api(bo, 'POST', '/v1/sos', {}, { 'Idempotency-Key': 'sos-bo-1' });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.incident.id).toBe(first.body.incident.id);
    const other = await v.api(bo, 'POST', '/v1/sos', { note: 'x' }, { 'Idempotency-Key': 'sos-bo-1' });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(await deliveriesOf(first.body.incident.id)).toHaveLength(1);
  });

  it('with a live timer: the timer ends, linked to the incident; the sweep cannot escalate it a second time', async () => {
    const cy = v.token('cy-panic');
    await contacts(cy, 1);
    const timer = (await v.api(cy, 'POST', '/v1/timers', { durationSeconds: 1, locationName: 'Café' })).body.timer;
    const r = await v.api(cy, 'POST', '/v1/sos', {});
    expect(r.status).toBe(201);
    expect(r.body.incident).toMatchObject({ timerId: timer.id, source: 'panic', locationName: 'Café' });
    const after = (await v.api(cy, 'GET', `/v1/timers/${timer.id}`)).body.timer;
    expect(after).toMatchObject({ status: 'expired', incidentId: r.body.incident.id });
    await untilPast(timer.expiresAt);
    await v.vigil.sweeper.sweep();
    const open = (await v.api(modToken(), 'GET', '/v1/admin/incidents?status=active')).body.incidents.filter(
      (i: { userId: string }) => i.userId === 'cy-panic',
    );
    expect(open).toHaveLength(1);
    expect(await deliveriesOf(r.body.incident.id)).toHaveLength(1);
  });

  it('with an open incident: attaches (no second incident, no second texts), moderators get incident.updated with the new source', async () => {
    const di = v.token('di-panic');
    await contacts(di, 2);
    const timer = (await v.api(di, 'POST', '/v1/timers', { durationSeconds: 1 })).body.timer;
    await untilPast(timer.expiresAt);
    await v.vigil.sweeper.sweep();
    const incidentId = (await v.api(di, 'GET', `/v1/timers/${timer.id}`)).body.timer.incidentId as string;
    expect(incidentId).toBeTruthy();
    const before = await deliveriesOf(incidentId);
    const r = await v.api(di, 'POST', '/v1/sos', {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ attached: true, incident: { id: incidentId, source: 'timer', sources: ['timer', 'panic'] } });
    expect(await deliveriesOf(incidentId)).toHaveLength(before.length);
    await eventually(
      async () =>
        mod
          .named('incident.updated')
          .some(
            (p) =>
              (p.incident as { id: string; sources: string[] }).id === incidentId &&
              (p.incident as { sources: string[] }).sources.includes('panic'),
          ),
      'incident.updated with the panic source',
    );
  });

  it('invariant 4: a press whose request died after the write is completed by the sweep (texts, sos.triggered)', async () => {
    const hu = v.token('hu-panic', { name: 'Hu' });
    await contacts(hu, 2);
    const me = await connect(v.url, hu);
    try {
      // the store write of a press, and nothing after it (the process died there)
      const r = await v.vigil.store.raisePanic({ incidentId: 'inc_crashed_panic', userId: 'hu-panic', displayName: 'Hu' });
      expect(r.kind).toBe('created');
      expect(await deliveriesOf('inc_crashed_panic')).toHaveLength(0);
      const report = await v.vigil.sweeper.sweep();
      expect(report.panicsRepaired).toBe(1);
      expect(await deliveriesOf('inc_crashed_panic')).toHaveLength(2);
      expect((await v.vigil.store.getIncident('inc_crashed_panic'))?.panicTexts).toBe('done');
      await eventually(
        async () => me.named('sos.triggered').some((p) => (p.incident as { id: string }).id === 'inc_crashed_panic'),
        'sos.triggered',
      );
      expect((await v.vigil.sweeper.sweep()).panicsRepaired).toBeUndefined();
    } finally {
      me.close();
    }
  });

  it('two presses at once → one incident', async () => {
    const ed = v.token('ed-panic');
    const [a, b] = await Promise.all([v.api(ed, 'POST', '/v1/sos', {}), v.api(ed, 'POST', '/v1/sos', {})]);
    expect([a.status, b.status].sort()).toEqual([200, 201]);
    expect(a.body.incident.id).toBe(b.body.incident.id);
  });

  it('bad input: 400 with the field named, nothing raised', async () => {
    const fy = v.token('fy-panic');
    for (const body of [{ location: { lat: 91, lng: 0 } }, { extra: 1 }, { note: 'x'.repeat(281) }]) {
      const r = await v.api(fy, 'POST', '/v1/sos', body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('validation_failed');
    }
    expect((await v.api(fy, 'POST', '/v1/sos', {}, { 'Idempotency-Key': 'has space' })).status).toBe(400);
    const mine = (await v.api(modToken(), 'GET', '/v1/admin/incidents')).body.incidents.filter(
      (i: { userId: string }) => i.userId === 'fy-panic',
    );
    expect(mine).toEqual([]);
  });

  it('a moderator acknowledging tells the person (inbox + notification.created)', async () => {
    const gu = v.token('gu-panic');
    const me = await connect(v.url, gu);
    try {
      const inc = (await v.api(gu, 'POST', '/v1/sos', {})).body.incident;
      expect((await v.api(modToken(), 'POST', `/v1/admin/incidents/${inc.id}/ack`)).status).toBe(200);
      await eventually(
        async () => me.named('notification.created').some((p) => (p.notification as { kind: string }).kind === 'incident_acknowledged'),
        'ack notification',
      );
      const inbox = (await v.api(gu, 'GET', '/v1/me/notifications')).body.notifications;
      expect(inbox).toMatchObject([{ kind: 'incident_acknowledged', incidentId: inc.id }]);
    } finally {
      me.close();
    }
  });
});
