/**
 * Moderator actions on texts over REST and Socket.IO against a real in-process Vigil (SQLite):
 * resend a dead text, cancel pending ones, notes, the audit. Admin only: a non-admin gets 403
 * and nothing changes. Ticks are driven by hand; the carrier is a scripted stand-in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AttemptResult } from '../../src/domain/delivery.js';
import type { Carrier, OutgoingSms } from '../../src/sms/port.js';
import { connect, type Recorder } from '../helpers/sockets.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { armWithContacts, dispatchRound, expireAndSweep, incidentOf, type IncidentView } from './sms-support.js';

/** Numbers in `down` fail retryably (dead after DELIVERY_MAX_ATTEMPTS=1); the rest are accepted. */
class ScriptedCarrier implements Carrier {
  readonly name = 'scripted';
  readonly down = new Set<string>();
  readonly sent: OutgoingSms[] = [];
  async send(sms: OutgoingSms): Promise<AttemptResult> {
    if (this.down.has(sms.to)) return { ok: false, carrier: this.name, retryable: true, code: 'http_503' };
    this.sent.push(sms);
    return { ok: true, carrier: this.name, providerMessageId: `SM${this.sent.length}` };
  }
}

let v: TestVigil;
const carrier = new ScriptedCarrier();
let admin: string;
const sockets: Recorder[] = [];

beforeAll(async () => {
  v = await startTestVigil({ DELIVERY_MAX_ATTEMPTS: '1' }, { manualTicks: true, carrier });
  admin = v.token('mod-ann', { admin: true });
});
afterAll(async () => {
  for (const s of sockets) s.close();
  await v?.stop();
});

const listen = async (token: string) => {
  const r = await connect(v.url, token);
  sockets.push(r);
  return r;
};
const audit = async (query = '') =>
  (await v.api(admin, 'GET', `/v1/admin/audit${query}`)).body as {
    audit: { id: string; actor: string; action: string; target: string }[];
    cursor?: string;
    more: boolean;
  };
const byPhone = (i: IncidentView, phone: string) => i.deliveries.find((d) => d.phone === phone)!;

describe('moderator actions on texts', () => {
  it('resend: admin only; a dead SOS goes back to pending with attempts reset, audited once, pushed to moderators and the owner', async () => {
    const dead = '+14155550201';
    const fine = '+14155550202';
    carrier.down.add(dead);
    const a = await armWithContacts(v, 'rose', [dead, fine], { durationSeconds: 1 }, 'Rose');
    await expireAndSweep(v, a.expiresAt);
    await dispatchRound(v);
    const inc = await incidentOf(v, a.timerId);
    const d = byPhone(inc, dead);
    expect(d).toMatchObject({ status: 'dead', attempts: 1 });
    const path = `/v1/admin/deliveries/${encodeURIComponent(d.key)}/resend`;

    // a person (even the owner) cannot resend: 403 and nothing changes
    expect((await v.api(a.token, 'POST', path)).status).toBe(403);
    expect((await v.api(v.token('someone'), 'POST', path)).status).toBe(403);
    expect(byPhone(await incidentOf(v, a.timerId), dead)).toMatchObject({ status: 'dead', attempts: 1 });
    expect((await audit()).audit.filter((l) => l.target === d.key)).toEqual([]);

    const mod = await listen(admin);
    const owner = await listen(a.token);
    const r = await v.api(admin, 'POST', path);
    expect(r.status).toBe(200);
    expect(r.body.delivery).toMatchObject({ key: d.key, status: 'pending', attempts: 0, resends: 1, phone: dead });
    for (const rec of [mod, owner])
      await eventually(
        async () => rec.named('delivery.updated').find((p) => (p.delivery as { key: string; status: string }).status === 'pending'),
        'delivery.updated pending',
      );
    // the owner's copy names no moderator and masks the number
    const ownerCopy = JSON.stringify(owner.named('delivery.updated'));
    expect(ownerCopy).not.toContain('mod-ann');
    expect(ownerCopy).not.toContain(dead);

    // a repeat answers the state as it is and adds no second line
    const again = await v.api(admin, 'POST', path);
    expect(again.status).toBe(200);
    expect(again.body.delivery).toMatchObject({ status: 'pending', resends: 1 });
    const lines = (await audit()).audit.filter((l) => l.target === d.key);
    expect(lines).toEqual([expect.objectContaining({ actor: 'mod-ann', action: 'delivery.resend', id: `resend:${d.key}:1` })]);

    // the carrier is back: the next round sends it
    carrier.down.delete(dead);
    expect(await dispatchRound(v)).toBe(1);
    expect(byPhone(await incidentOf(v, a.timerId), dead)).toMatchObject({ status: 'sent', attempts: 1, resends: 1 });
    expect(carrier.sent.filter((s) => s.to === dead)).toHaveLength(1);

    // a sent text is not resent; an unknown key is 404
    const sent = await v.api(admin, 'POST', `/v1/admin/deliveries/${encodeURIComponent(byPhone(inc, fine).key)}/resend`);
    expect(sent.status).toBe(409);
    expect(sent.body.error.code).toBe('delivery_not_resendable');
    expect((await v.api(admin, 'POST', '/v1/admin/deliveries/nope%3Anope/resend')).status).toBe(404);
  });

  it('resend: the SOS of a false alarm is refused with 409 incident_false_alarm and stays dead', async () => {
    const dead = '+14155550211';
    carrier.down.add(dead);
    const a = await armWithContacts(v, 'lena', [dead], { durationSeconds: 1 }, 'Lena');
    await expireAndSweep(v, a.expiresAt);
    await dispatchRound(v);
    expect((await v.api(a.token, 'POST', `/v1/timers/${a.timerId}/safe`)).status).toBe(200);
    const d = byPhone(await incidentOf(v, a.timerId), dead);
    const r = await v.api(admin, 'POST', `/v1/admin/deliveries/${encodeURIComponent(d.key)}/resend`);
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('incident_false_alarm');
    expect(byPhone(await incidentOf(v, a.timerId), dead)).toMatchObject({ status: 'dead' });
  });

  it('cancel: admin only; pending texts become superseded (cancelled_by_moderator), are never sent, one audit line each', async () => {
    const phones = ['+14155550221', '+14155550222'];
    const a = await armWithContacts(v, 'mia', phones, { durationSeconds: 1 }, 'Mia');
    await expireAndSweep(v, a.expiresAt); // deliveries pending: nothing dispatched yet
    const inc = await incidentOf(v, a.timerId);
    const path = `/v1/admin/incidents/${inc.id}/deliveries/cancel`;
    expect((await v.api(a.token, 'POST', path)).status).toBe(403);
    expect((await incidentOf(v, a.timerId)).deliveries.map((d) => d.status)).toEqual(['pending', 'pending']);

    const mod = await listen(admin);
    const r = await v.api(admin, 'POST', path);
    expect(r.status).toBe(200);
    expect([...r.body.cancelled].sort()).toEqual(inc.deliveries.map((d) => d.key).sort());
    for (const d of r.body.incident.deliveries) expect(d).toMatchObject({ status: 'superseded', lastError: 'cancelled_by_moderator' });
    await eventually(
      async () => mod.named('delivery.updated').filter((p) => (p.delivery as { incidentId: string }).incidentId === inc.id).length === 2,
      'two delivery.updated',
    );

    expect(await dispatchRound(v)).toBe(0);
    for (const p of phones) expect(carrier.sent.filter((s) => s.to === p)).toEqual([]);
    const repeat = await v.api(admin, 'POST', path);
    expect(repeat.body.cancelled).toEqual([]);
    expect((await audit()).audit.filter((l) => l.action === 'delivery.cancel' && l.target.startsWith(inc.id)).map((l) => l.actor)).toEqual([
      'mod-ann',
      'mod-ann',
    ]);
    expect((await v.api(admin, 'POST', '/v1/admin/incidents/nope/deliveries/cancel')).status).toBe(404);
  });

  it('notes: admin only, plain text, idempotent per key, listed on the incident, pushed to moderators only; the audit pages newest first', async () => {
    const a = await armWithContacts(v, 'ines', ['+14155550231'], { durationSeconds: 1 }, 'Ines');
    await expireAndSweep(v, a.expiresAt);
    const inc = await incidentOf(v, a.timerId);
    const path = `/v1/admin/incidents/${inc.id}/notes`;
    const owner = await listen(a.token);
    const mod = await listen(admin);

    expect((await v.api(a.token, 'POST', path, { text: 'hi' })).status).toBe(403);
    for (const [text, code] of [
      ['   ', 'note_invalid'],
      ['evil \u202e txt.exe', 'note_invalid'],
      ['bell \u0007', 'note_invalid'],
      ['', 'validation_failed'],
      ['x'.repeat(2001), 'validation_failed'],
    ] as const) {
      const bad = await v.api(admin, 'POST', path, { text });
      expect([bad.status, bad.body.error.code]).toEqual([400, code]);
    }
    const headers = { 'Idempotency-Key': 'note-1' };
    const first = await v.api(admin, 'POST', path, { text: 'Called her sister.\nNo answer yet.' }, headers);
    expect(first.status).toBe(201);
    expect(first.body.note).toMatchObject({ author: 'mod-ann', text: 'Called her sister.\nNo answer yet.', incidentId: inc.id });
    const retry = await v.api(admin, 'POST', path, { text: 'Called her sister.\nNo answer yet.' }, headers);
    expect([retry.status, retry.headers['idempotent-replayed'], retry.body.note.id]).toEqual([200, 'true', first.body.note.id]);
    expect((await v.api(admin, 'POST', path, { text: 'another text' }, headers)).status).toBe(422);
    await v.api(v.token('mod-bob', { admin: true }), 'POST', path, { text: 'Police informed.' });

    const view = (await v.api(admin, 'GET', `/v1/admin/incidents/${inc.id}`)).body.incident;
    expect(view.notes.map((n: { author: string; text: string }) => [n.author, n.text])).toEqual([
      ['mod-ann', 'Called her sister.\nNo answer yet.'],
      ['mod-bob', 'Police informed.'],
    ]);
    await eventually(async () => mod.named('incident.updated').filter((p) => p.note).length === 2, 'two note events to moderators');
    // the owner is told nothing about notes (their events never carry one)
    expect(owner.named('incident.updated').filter((p) => p.note)).toEqual([]);

    // paging newest first: one line per page until the end
    const seen: string[] = [];
    let page = await audit('?limit=1');
    for (let i = 0; i < 50 && page.audit.length > 0; i++) {
      seen.push(...page.audit.map((l) => l.id));
      if (!page.cursor) break;
      page = await audit(`?limit=1&cursor=${page.cursor}`);
    }
    const all = (await audit('?limit=100')).audit.map((l) => l.id);
    expect(seen).toEqual(all);
    // the newest: reading the card (its contacts) above, then the two notes
    expect(all.slice(0, 3)).toEqual([expect.stringMatching(/^read:/), expect.stringMatching(/^note:/), expect.stringMatching(/^note:/)]);
    expect((await v.api(admin, 'GET', '/v1/admin/audit?cursor=a1.bm9wZQ')).status).toBe(400);
    expect((await v.api(a.token, 'GET', '/v1/admin/audit')).status).toBe(403);
  });
});
