/**
 * The retention job against a real SQLite file: records closed more than RETENTION_DAYS ago
 * are anonymised in bounded batches, open incidents and live timers are untouched, the
 * counts reach the metrics. Old records are written by a second connection to the same file
 * whose clock is set 40 days back (as a replica would have written them then).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryKey } from '../../src/domain/delivery.js';
import type { Incident } from '../../src/domain/incident.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';

const DAY = 86_400_000;
let v: TestVigil;
let past: SqliteStore;
let admin: string;

beforeAll(async () => {
  v = await startTestVigil({ RETENTION_DAYS: '30', RETENTION_BATCH_SIZE: '2', RETENTION_MAX_BATCHES: '2' }, { manualTicks: true });
  past = await SqliteStore.open({ file: join(v.dataDir, 'vigil.db'), clock: () => Date.now() - 40 * DAY });
  admin = v.token('mod-ann', { admin: true });
});
afterAll(async () => {
  await past?.close();
  await v?.stop();
});

const where = { locationName: 'Blue Bottle, Mission St', location: { lat: 37.76, lng: -122.42 } };
const place = { ...where, displayName: 'Rita' };

/** An SOS opened 40 days ago with one sent text and a note; resolved then when `close`, else still open. */
async function oldIncident(close: boolean): Promise<Incident> {
  const now = await past.now();
  const armed = await past.armTimer({
    id: randomUUID(),
    userId: `u-${randomUUID()}`,
    startedAt: new Date(now.getTime() - 120_000),
    expiresAt: new Date(now.getTime() - 1_000),
    ...place,
  });
  if (armed.kind !== 'created') throw new Error(armed.kind);
  const [timer] = (await past.claimDueTimers(100, 1)).filter((t) => t.id === armed.timer.id);
  const { incident } = await past.openIncident(timer!, 1, `inc_${randomUUID()}`);
  await past.addDeliveries(incident, [
    {
      key: deliveryKey(incident.id, 'c1', 'sos'),
      contactId: 'c1',
      contactName: 'Sam',
      phone: '+14155550301',
      kind: 'sos',
      body: 'SOS from Vigil: Rita…',
    },
  ]);
  await past.markEscalated(timer!.id, incident.id);
  for (const c of await past.claimDeliveries(10, 60_000))
    await past.recordAttempt(c.key, c.attempts, { status: 'sent', carrier: 'console', providerMessageId: `SM${randomUUID()}` });
  await past.addIncidentNote({
    id: randomUUID(),
    incidentId: incident.id,
    person: incident.userId,
    author: 'mod-ann',
    text: 'Rita called back from 555-0199.',
  });
  if (close) await past.transitionIncident(incident.id, ['active'], 'resolved', 'mod-ann');
  return incident;
}

async function metric(name: string, labels: string): Promise<number> {
  const page = await (await fetch(`${v.url}/metrics`)).text();
  const line = page.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').pop()) : NaN;
}

describe('retention job', () => {
  it('anonymises closed records older than RETENTION_DAYS in bounded runs; open and recent ones untouched; counts in metrics', async () => {
    // old and closed: three cancelled timers and two resolved incidents (their timers expired)
    const oldTimers: string[] = [];
    for (let i = 0; i < 3; i++) {
      const now = await past.now();
      const r = await past.armTimer({
        id: randomUUID(),
        userId: `u-${randomUUID()}`,
        startedAt: now,
        expiresAt: new Date(now.getTime() + 3_600_000),
        ...place,
      });
      if (r.kind !== 'created') throw new Error(r.kind);
      await past.resolveTimer(r.timer.id, r.timer.userId, 'cancelled');
      oldTimers.push(r.timer.id);
    }
    const closed = [await oldIncident(true), await oldIncident(true)];
    // old but still open: untouched however old
    const open = await oldIncident(false);
    // closed today, and live: untouched
    const alice = v.token('alice');
    const recent = (await v.api(alice, 'POST', '/v1/timers', { durationSeconds: 60, ...where })).body.timer;
    await v.api(alice, 'POST', `/v1/timers/${recent.id}/cancel`);
    const live = (await v.api(alice, 'POST', '/v1/timers', { durationSeconds: 600, ...where })).body.timer;

    // batches of 2, at most 2 per run: the first run stops with work left
    const first = await v.vigil.retention.run();
    expect(first).toMatchObject({ outcome: 'more_left', batches: 2 });
    const second = await v.vigil.retention.run();
    expect(second.outcome).toBe('done');
    const total = (k: 'timers' | 'incidents' | 'deliveries' | 'notes') => first.counts[k] + second.counts[k];
    expect([total('timers'), total('incidents'), total('deliveries'), total('notes')]).toEqual([5, 2, 2, 2]);
    expect((await v.vigil.retention.run()).counts).toEqual({
      timers: 0,
      incidents: 0,
      deliveries: 0,
      notes: 0,
      fixes: 0,
      notifications: 0,
    });

    for (const i of closed) {
      const view = (await v.api(admin, 'GET', `/v1/admin/incidents/${i.id}`)).body.incident;
      expect(view.redactedAt).toEqual(expect.any(String));
      expect(view).not.toHaveProperty('locationName');
      expect(view).not.toHaveProperty('location');
      expect(view.deliveries[0]).toMatchObject({ phone: '+1********01', contactName: '', status: 'sent' });
      expect(view.notes[0]).toMatchObject({ text: '', author: 'mod-ann' });
      const body = (await past.deliveriesFor([i.id]))[0]!.body;
      expect(body).toBe('');
    }
    for (const id of oldTimers) expect(await past.getTimer(id)).not.toHaveProperty('locationName');
    const openView = (await v.api(admin, 'GET', `/v1/admin/incidents/${open.id}`)).body.incident;
    expect(openView).toMatchObject({ status: 'active', locationName: place.locationName, location: place.location });
    expect(openView.deliveries[0]).toMatchObject({ phone: '+14155550301' });
    expect(openView.notes[0].text).toBe('Rita called back from 555-0199.');
    expect((await past.getTimer(open.timerId))?.locationName).toBe(place.locationName);
    for (const t of [recent, live])
      expect((await v.api(alice, 'GET', `/v1/timers/${t.id}`)).body.timer.locationName).toBe(place.locationName);

    expect(await metric('vigil_retention_records_total', 'kind="timers"')).toBe(5);
    expect(await metric('vigil_retention_records_total', 'kind="deliveries"')).toBe(2);
    expect(await metric('vigil_retention_runs_total', 'outcome="more_left"')).toBe(1);
  });

  it('RETENTION_DAYS=0 turns the job off', async () => {
    const off = await startTestVigil({ RETENTION_DAYS: '0' }, { manualTicks: true });
    try {
      expect(await off.vigil.retention.run()).toMatchObject({ outcome: 'off', batches: 0 });
    } finally {
      await off.stop();
    }
  });
});
