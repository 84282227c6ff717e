/**
 * Every access audited, over REST against a real in-process Vigil (SQLite): a moderator's
 * acknowledge, resolve and retry each leave one line; every read of a person's timers, an
 * incident's card or trail leaves one line per request; a look at a person's timers before
 * any SOS needs a stated reason; `GET /v1/admin/audit` filters by actor, person and incident
 * and refuses a bad filter with 400, changing nothing. (Both stores: test/contract/store-contract-audit.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { armWithContacts, expireAndSweep, incidentOf } from './sms-support.js';

interface Line {
  id: string;
  actor: string;
  action: string;
  target: string;
  incidentId?: string;
  person?: string;
  reason?: string;
}

let v: TestVigil;
let ann: string;
let bob: string;

beforeAll(async () => {
  v = await startTestVigil({}, { manualTicks: true });
  ann = v.token('mod-ann', { admin: true });
  bob = v.token('mod-bob', { admin: true });
});
afterAll(async () => {
  await v?.stop();
});

async function audit(query: string, token = ann): Promise<{ audit: Line[]; cursor?: string; more: boolean }> {
  const r = await v.api(token, 'GET', `/v1/admin/audit${query}`);
  expect(r.status).toBe(200);
  return r.body as { audit: Line[]; cursor?: string; more: boolean };
}

/** Every line matching `query`, following the cursor one line at a time. */
async function allLines(query: string): Promise<Line[]> {
  const out: Line[] = [];
  let page = await audit(`?limit=1${query}`);
  for (let i = 0; i < 100; i++) {
    out.push(...page.audit);
    if (!page.cursor) break;
    page = await audit(`?limit=1${query}&cursor=${page.cursor}`);
  }
  return out;
}

const count = async () => (await v.vigil.store.listAudit({ limit: 500 })).length;

describe('every access audited', () => {
  it('acknowledge, resolve: one line each, naming the moderator, the person and the incident; a repeat adds none', async () => {
    const a = await armWithContacts(v, 'gail', ['+14155550301'], { durationSeconds: 1 });
    await expireAndSweep(v, a.expiresAt);
    const inc = await incidentOf(v, a.timerId);
    expect((await v.api(ann, 'POST', `/v1/admin/incidents/${inc.id}/ack`)).status).toBe(200);
    expect((await v.api(ann, 'POST', `/v1/admin/incidents/${inc.id}/ack`)).status).toBe(200);
    expect((await v.api(bob, 'POST', `/v1/admin/incidents/${inc.id}/resolve`)).status).toBe(200);
    expect((await v.api(bob, 'POST', `/v1/admin/incidents/${inc.id}/resolve`)).status).toBe(200);
    const lines = (await allLines(`&incident=${inc.id}`)).filter((l) => !l.action.endsWith('.read'));
    expect(lines.map(({ action, actor, person, incidentId }) => ({ action, actor, person, incidentId }))).toEqual([
      { action: 'incident.resolve', actor: 'mod-bob', person: 'gail', incidentId: inc.id },
      { action: 'incident.acknowledge', actor: 'mod-ann', person: 'gail', incidentId: inc.id },
    ]);
  });

  it('retry of a dead-lettered escalation: one line naming the person', async () => {
    const a = await armWithContacts(v, 'hana', ['+14155550302'], { durationSeconds: 1 });
    await expireAndSweep(v, a.expiresAt);
    // its escalation dead-lettered by hand (the sweep escalated it; the store accepts a failure while pending only)
    const failing = await armWithContacts(v, 'hana2', ['+14155550303'], { durationSeconds: 60 });
    await v.vigil.store.claimDueTimers(10, 1, -120_000); // due 120 s early: claimed now, escalation pending
    expect((await v.vigil.store.recordEscalationFailure(failing.timerId, 'boom', 1))?.escalation).toBe('failed');
    expect((await v.api(ann, 'POST', `/v1/admin/escalations/${failing.timerId}/retry`)).status).toBe(200);
    expect((await v.api(ann, 'POST', `/v1/admin/escalations/${failing.timerId}/retry`)).status).toBe(200);
    const lines = await allLines('&person=hana2');
    expect(lines.map(({ action, actor, target }) => ({ action, actor, target }))).toEqual([
      { action: 'escalation.retry', actor: 'mod-ann', target: failing.timerId },
    ]);
  });

  it("reads: a person's timers, an incident's card, its trail, many trails: one line per request (per incident for many), before anything is read", async () => {
    const a = await armWithContacts(v, 'ines', ['+14155550304'], { durationSeconds: 1 });
    await expireAndSweep(v, a.expiresAt);
    const inc = await incidentOf(v, a.timerId);
    const b = await armWithContacts(v, 'juno', ['+14155550305'], { durationSeconds: 1 });
    await expireAndSweep(v, b.expiresAt);
    const incB = await incidentOf(v, b.timerId);
    const before = await count();
    // an open incident: no reason needed (one may still be given)
    expect((await v.api(bob, 'GET', '/v1/admin/users/ines/timers')).status).toBe(200);
    expect((await v.api(bob, 'GET', `/v1/admin/incidents/${inc.id}`)).status).toBe(200);
    expect((await v.api(bob, 'GET', `/v1/admin/incidents/${inc.id}`)).status).toBe(200);
    expect((await v.api(bob, 'GET', `/v1/admin/incidents/${inc.id}/locations`)).status).toBe(200);
    expect((await v.api(bob, 'GET', `/v1/admin/incidents/locations?ids=${inc.id},${incB.id},nope`)).status).toBe(200);
    expect(await count()).toBe(before + 6);
    const mine = await allLines('&actor=mod-bob&person=ines');
    expect(mine.map((l) => l.action).sort()).toEqual(['incident.read', 'incident.read', 'timers.read', 'trail.read', 'trail.read']);
    expect(mine.find((l) => l.action === 'timers.read')).toMatchObject({ target: 'ines', incidentId: inc.id });
    expect((await allLines(`&incident=${incB.id}`)).map((l) => l.action)).toEqual(['trail.read']);
    // an unknown incident: 404, nothing read, no line
    expect((await v.api(bob, 'GET', '/v1/admin/incidents/nope')).status).toBe(404);
    expect((await v.api(bob, 'GET', '/v1/admin/incidents/nope/locations')).status).toBe(404);
    expect(await count()).toBe(before + 6);
  });

  it("a person's timers before any SOS: 400 reason_required without a reason (nothing recorded); with one, recorded", async () => {
    const t = v.token('kira');
    expect((await v.api(t, 'POST', '/v1/timers', { durationSeconds: 600 })).status).toBe(201);
    const before = await count();
    const bare = await v.api(ann, 'GET', '/v1/admin/users/kira/timers');
    expect([bare.status, bare.body.error.code]).toEqual([400, 'reason_required']);
    const blank = await v.api(ann, 'GET', '/v1/admin/users/kira/timers?reason=%20%20');
    expect([blank.status, blank.body.error.code]).toEqual([400, 'reason_invalid']);
    const bidi = await v.api(ann, 'GET', `/v1/admin/users/kira/timers?reason=${encodeURIComponent('ok\u202e')}`);
    expect([bidi.status, bidi.body.error.code]).toEqual([400, 'reason_invalid']);
    const long = await v.api(ann, 'GET', `/v1/admin/users/kira/timers?reason=${'x'.repeat(501)}`);
    expect([long.status, long.body.error.code]).toEqual([400, 'validation_failed']);
    expect(await count()).toBe(before);
    const reason = 'She called support: her phone died at the café';
    const ok = await v.api(ann, 'GET', `/v1/admin/users/kira/timers?reason=${encodeURIComponent(reason)}`);
    expect(ok.status).toBe(200);
    expect(ok.body.timers).toHaveLength(1);
    const lines = await allLines('&person=kira');
    expect(lines).toEqual([expect.objectContaining({ action: 'timers.read', actor: 'mod-ann', target: 'kira', person: 'kira', reason })]);
    expect(lines[0]?.incidentId).toBeUndefined();
  });

  it('GET /v1/admin/audit: bad filters answer 400 validation_failed; admin only', async () => {
    for (const q of [
      '?actor=',
      '?person=a%20b',
      `?incident=${'i'.repeat(201)}`,
      '?actor=a&actor=b',
      '?who=ann',
      '?limit=0',
      '?cursor=nope',
    ])
      expect([q, (await v.api(ann, 'GET', `/v1/admin/audit${q}`)).body.error?.code]).toEqual([q, 'validation_failed']);
    expect((await v.api(v.token('kira'), 'GET', '/v1/admin/audit?person=kira')).status).toBe(403);
    // a filter that matches nothing: an empty page, no cursor
    expect(await audit('?actor=nobody')).toEqual({ audit: [], more: false });
  });
});
