/**
 * What the person and moderators see of one SOS (docs/security.md, "Who sees what"), against a
 * real in-process Vigil with real sockets:
 * - the met person's phone is masked in every event (the person's and the moderators'), as a
 *   delivery's number is; REST answers carry it whole (the owner typed it; moderators call it);
 * - the person's events and REST answers never name a moderator (`acknowledgedBy`,
 *   `resolvedBy`), nor does their inbox; moderators' do.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maskPhone } from '../../src/domain/messages.js';
import { openSockets, type Recorder } from '../helpers/sockets.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { expireAndSweep } from './sms-support.js';

let n = 0;
const person = (tag: string) => `pv-${tag}-${++n}-${randomBytes(3).toString('hex')}`;
type Payload = Record<string, unknown>;
const incidentOf = (p: Payload) => p.incident as Payload;

let v: TestVigil;
const sockets = openSockets();
beforeAll(async () => {
  v = await startTestVigil({}, { manualTicks: true });
});
afterAll(async () => {
  sockets.closeAll();
  await v?.stop();
});
const sock = (token: string) => sockets.connect(v.url, token);

describe('who sees what', () => {
  it("the met person's phone is masked in every event, the person's and the moderators'; REST answers carry it whole", async () => {
    const PHONE = '+14155550177';
    const ann = person('ann');
    const token = v.token(ann);
    const mod = v.token(person('mod'), { admin: true });
    const mine = await sock(token);
    const mods = await sock(mod);
    expect((await v.api(token, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Sis', phone: '+14155550100' }] })).status).toBe(200);
    const armed = await v.api(token, 'POST', '/v1/timers', { durationSeconds: 1, meeting: { name: 'Bob', phone: PHONE } });
    expect(armed.status).toBe(201);
    const timerId = armed.body.timer.id as string;
    expect(armed.body.timer.meeting.phone).toBe(PHONE);

    await expireAndSweep(v, Date.parse(armed.body.timer.expiresAt as string));
    await eventually(async () => mine.named('sos.triggered').length === 1, "the person's sos.triggered");
    await eventually(async () => mods.named('sos.triggered').length === 1, "the moderators' sos.triggered");

    const masked = maskPhone(PHONE);
    const armedEvent = mine.named('timer.armed')[0]!.timer as { meeting: { phone: string } };
    expect(armedEvent.meeting.phone).toBe(masked);
    for (const r of [mine, mods]) {
      expect((incidentOf(r.named('sos.triggered')[0]!).meeting as { phone: string }).phone).toBe(masked);
      expect(((r.named('timer.expired')[0]!.timer as Payload).meeting as { phone: string }).phone).toBe(masked);
      expect(JSON.stringify(r.events)).not.toContain(PHONE);
    }

    // over REST: whole, to the owner and to moderators
    expect((await v.api(token, 'GET', `/v1/timers/${timerId}`)).body.timer.meeting.phone).toBe(PHONE);
    const incidentId = incidentOf(mine.named('sos.triggered')[0]!).id as string;
    expect((await v.api(mod, 'GET', `/v1/admin/incidents/${incidentId}`)).body.incident.meeting.phone).toBe(PHONE);
  });

  it('the person never sees who acknowledged or resolved their SOS (events, REST answers, inbox); moderators do', async () => {
    const bea = person('bea');
    const modId = person('mod');
    const token = v.token(bea);
    const mod = v.token(modId, { admin: true });
    const mine = await sock(token);
    const mods = await sock(mod);

    const raised = await v.api(token, 'POST', '/v1/sos', {});
    expect(raised.status).toBe(201);
    const id = raised.body.incident.id as string;
    expect((await v.api(mod, 'POST', `/v1/admin/incidents/${id}/ack`)).status).toBe(200);

    const acked = (r: Recorder) =>
      r
        .named('incident.updated')
        .map(incidentOf)
        .find((i) => i.status === 'acknowledged');
    await eventually(async () => acked(mine), "the person's incident.updated (acknowledged)");
    await eventually(async () => acked(mods), "the moderators' incident.updated (acknowledged)");
    expect(acked(mods)!.acknowledgedBy).toBe(modId);
    expect(acked(mine)).not.toHaveProperty('acknowledgedBy');

    // a second press attaches to the acknowledged incident: the answer is the person's view
    const again = await v.api(token, 'POST', '/v1/sos', {});
    expect(again.status).toBe(200);
    expect(again.body.incident.acknowledgedAt).toBeDefined();
    expect(again.body.incident).not.toHaveProperty('acknowledgedBy');

    expect((await v.api(mod, 'POST', `/v1/admin/incidents/${id}/resolve`)).status).toBe(200);
    const resolved = (r: Recorder) =>
      r
        .named('incident.updated')
        .map(incidentOf)
        .find((i) => i.status === 'resolved');
    await eventually(async () => resolved(mine), "the person's incident.updated (resolved)");
    await eventually(async () => resolved(mods), "the moderators' incident.updated (resolved)");
    expect(resolved(mods)!.resolvedBy).toBe(modId);
    expect(resolved(mine)).not.toHaveProperty('resolvedBy');
    expect(resolved(mine)).not.toHaveProperty('acknowledgedBy');

    // "I'm safe" after the resolve answers the incident as the person sees it
    const safe = await v.api(token, 'POST', `/v1/incidents/${id}/safe`, {});
    expect(safe.status).toBe(200);
    expect(safe.body.incident).not.toHaveProperty('resolvedBy');
    expect(safe.body.incident).not.toHaveProperty('acknowledgedBy');

    // nothing the person received names the moderator
    expect(JSON.stringify(mine.events)).not.toContain(modId);
    expect(JSON.stringify((await v.api(token, 'GET', '/v1/me/notifications')).body)).not.toContain(modId);
    // the moderators' REST view still does
    const seen = await v.api(mod, 'GET', `/v1/admin/incidents/${id}`);
    expect(seen.body.incident).toMatchObject({ acknowledgedBy: modId, resolvedBy: modId });
  });
});
