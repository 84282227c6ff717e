/**
 * A person's data is theirs, over REST against a real in-process Vigil (SQLite):
 * `GET /v1/me/export` answers everything about the caller (and nothing about anyone else);
 * `DELETE /v1/me` erases it, 409 while their SOS is open or a timer runs (nothing erased);
 * afterwards the audit names only their pseudonym. (Both stores: test/contract/store-contract-personal.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { armWithContacts, expireAndSweep, incidentOf } from './sms-support.js';

let v: TestVigil;
let mod: string;

beforeAll(async () => {
  v = await startTestVigil({}, { manualTicks: true });
  mod = v.token('mod-ann', { admin: true });
});
afterAll(async () => {
  await v?.stop();
});

describe("a person's data is theirs", () => {
  it('export: timers, fixes, contacts, inbox, incidents (no moderator ids), keys counted; only the caller’s', async () => {
    const a = await armWithContacts(v, 'lena', ['+14155550501'], { durationSeconds: 1, locationName: 'Blue Bottle' });
    await armWithContacts(v, 'mira', ['+14155550502'], { durationSeconds: 600 });
    await expireAndSweep(v, a.expiresAt);
    const inc = await incidentOf(v, a.timerId);
    expect((await v.api(mod, 'POST', `/v1/admin/incidents/${inc.id}/ack`)).status).toBe(200);
    const keyed = await v.api(a.token, 'POST', '/v1/timers', { durationSeconds: 600 }, { 'Idempotency-Key': 'lena-1' });
    expect(keyed.status).toBe(201);
    const r = await v.api(a.token, 'GET', '/v1/me/export');
    expect(r.status).toBe(200);
    expect(r.body.userId).toBe('lena');
    expect(r.body.timers.map((t: { id: string }) => t.id).sort()).toEqual([a.timerId, keyed.body.timer.id].sort());
    expect(r.body.contacts).toEqual([expect.objectContaining({ name: 'Contact 1', phone: '+14155550501' })]);
    expect(r.body.incidents).toEqual([expect.objectContaining({ id: inc.id, status: 'acknowledged' })]);
    expect(r.body.incidents[0].acknowledgedBy).toBeUndefined(); // the person's own view: no moderator ids
    expect(r.body.notifications.map((n: { kind: string }) => n.kind)).toContain('incident_acknowledged');
    expect(r.body.idempotencyRecords).toBe(1);
    expect(JSON.stringify(r.body)).not.toContain('mira');
    expect(JSON.stringify(r.body)).not.toContain('+14155550502');
  });

  it('erase: 409 incident_open, then 409 timer_live (nothing erased); then erased, and the audit keeps only the pseudonym', async () => {
    const t = v.token('lena');
    const open = await v.api(t, 'DELETE', '/v1/me');
    expect([open.status, open.body.error.code]).toEqual([409, 'incident_open']);
    const inc = (await v.api(t, 'GET', '/v1/me/export')).body.incidents[0] as { id: string };
    expect((await v.api(mod, 'POST', `/v1/admin/incidents/${inc.id}/resolve`)).status).toBe(200);
    const live = await v.api(t, 'DELETE', '/v1/me');
    expect([live.status, live.body.error.code]).toEqual([409, 'timer_live']);
    expect((await v.api(t, 'GET', '/v1/me/export')).body.timers).toHaveLength(2);
    const running = (await v.api(t, 'GET', '/v1/timers?status=active')).body.timers[0] as { id: string };
    expect((await v.api(t, 'POST', `/v1/timers/${running.id}/cancel`)).status).toBe(200);

    const erased = await v.api(t, 'DELETE', '/v1/me');
    expect(erased.status).toBe(200);
    expect(erased.body.erased).toMatchObject({ timers: 2, contacts: 1, idempotencyRecords: 1, incidents: 1 });
    expect((await v.api(t, 'GET', '/v1/me/export')).body).toMatchObject({
      timers: [],
      fixes: [],
      contacts: [],
      notifications: [],
      incidents: [],
      idempotencyRecords: 0,
    });
    const audit = (await v.api(mod, 'GET', '/v1/admin/audit?limit=500')).body.audit as { person?: string; target: string }[];
    expect(JSON.stringify(audit)).not.toContain('lena');
    const pseudonym = (await v.api(mod, 'GET', `/v1/admin/incidents/${inc.id}`)).body.incident.userId as string;
    expect(pseudonym).toMatch(/^p_[0-9a-f]{16}$/);
    expect(audit.filter((l) => l.person === pseudonym).length).toBeGreaterThanOrEqual(2);
    // a repeat is harmless; someone else is untouched
    expect((await v.api(t, 'DELETE', '/v1/me')).status).toBe(200);
    expect((await v.api(v.token('mira'), 'GET', '/v1/me/export')).body.timers).toHaveLength(1);
  });
});
