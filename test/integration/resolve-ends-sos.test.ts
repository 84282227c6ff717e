/**
 * Resolving stops the SOS (issue 35, item 5), against a real in-process Vigil (SQLite), sweeps
 * and dispatches by hand, a recording carrier:
 *   - a moderator's resolve supersedes the SOS texts that have not gone out (and a `moved`
 *     follow-up), and each contact whose SOS went out gets one closing text, after it;
 *   - with RESOLVE_NOTIFY_CONTACTS=false nobody gets a closing text, and "I'm safe" afterwards
 *     still tells the contacts who were texted that the person is safe;
 *   - an SOS a dispatcher claims after the resolve is superseded, never sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AttemptResult } from '../../src/domain/delivery.js';
import type { Carrier, OutgoingSms } from '../../src/sms/port.js';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { armWithContacts, dispatchRound, expireAndSweep } from './sms-support.js';

/** Accepts every text except to the numbers in `down`, which fail retryably (a carrier outage for them). */
class PickyCarrier implements Carrier {
  readonly name = 'picky';
  readonly sent: OutgoingSms[] = [];
  readonly down = new Set<string>();
  async send(sms: OutgoingSms): Promise<AttemptResult> {
    if (this.down.has(sms.to)) return { ok: false, carrier: this.name, retryable: true, code: 'http_503' };
    this.sent.push(sms);
    return { ok: true, carrier: this.name, providerMessageId: `picky-${this.sent.length}` };
  }
  kindsTo(to: string): string[] {
    return this.sent.filter((s) => s.to === to).map((s) => s.idempotencyKey.split(':')[2] ?? 'sos');
  }
}

let n = 0;
const phone = () => `+1415557${String(1000 + ++n).padStart(4, '0')}`;

describe('a moderator resolves: the SOS stops, the contacts who were alarmed hear it is over', () => {
  let v: TestVigil;
  const carrier = new PickyCarrier();
  beforeAll(async () => {
    v = await startTestVigil({}, { manualTicks: true, carrier });
  });
  afterAll(async () => {
    await v?.stop();
  });
  const mod = () => v.token('mod-resolve', { admin: true });

  it('item 5: unsent SOS texts are superseded; each contact whose SOS went out gets one closing text, after it; a repeat sends nothing more', async () => {
    const [reached, unreached] = [phone(), phone()];
    carrier.down.add(unreached);
    const a = await armWithContacts(v, 'resolve-ann', [reached, unreached], { durationSeconds: 1 }, 'Ann');
    await expireAndSweep(v, a.expiresAt);
    await dispatchRound(v);
    const incidentId = (await v.api(a.token, 'GET', `/v1/timers/${a.timerId}`)).body.timer.incidentId as string;
    expect(carrier.kindsTo(reached)).toEqual(['sos']);

    const r = await v.api(mod(), 'POST', `/v1/admin/incidents/${incidentId}/resolve`);
    expect(r.status).toBe(200);
    expect(r.body.incident).toMatchObject({ status: 'resolved', allClear: 'done' });
    carrier.down.clear();
    await dispatchRound(v);
    expect(carrier.kindsTo(reached)).toEqual(['sos', 'all_clear']);
    expect(carrier.sent.find((s) => s.to === reached && s.idempotencyKey.endsWith(':all_clear'))?.body).toMatch(
      /closed by the Vigil safety team/,
    );
    expect(carrier.kindsTo(unreached)).toEqual([]); // its SOS never went out: superseded, and no closing text
    const ds = (await v.vigil.store.deliveriesFor([incidentId])).filter((d) => d.phone === unreached);
    expect(ds.map((d) => `${d.kind}:${d.status}`)).toEqual(['sos:superseded']);

    expect((await v.api(mod(), 'POST', `/v1/admin/incidents/${incidentId}/resolve`)).status).toBe(200);
    await dispatchRound(v);
    expect(carrier.kindsTo(reached)).toEqual(['sos', 'all_clear']);
  });

  it('item 5: an SOS claimed by a dispatcher after the resolve is superseded, never sent', async () => {
    const p = phone();
    const a = await armWithContacts(v, 'resolve-ben', [p], { durationSeconds: 1 }, 'Ben');
    await expireAndSweep(v, a.expiresAt);
    const incidentId = (await v.api(a.token, 'GET', `/v1/timers/${a.timerId}`)).body.timer.incidentId as string;
    // the resolve lands while the SOS is pending, but its superseding step is lost (a crash right after the CAS)
    await v.vigil.store.transitionIncident(incidentId, ['active', 'acknowledged'], 'resolved', 'mod-x');
    await dispatchRound(v);
    expect(carrier.kindsTo(p)).toEqual([]);
    expect((await v.vigil.store.deliveriesFor([incidentId])).map((d) => d.status)).toEqual(['superseded']);
  });
});

describe('RESOLVE_NOTIFY_CONTACTS=false', () => {
  let v: TestVigil;
  const carrier = new PickyCarrier();
  beforeAll(async () => {
    v = await startTestVigil({ RESOLVE_NOTIFY_CONTACTS: 'false' }, { manualTicks: true, carrier });
  });
  afterAll(async () => {
    await v?.stop();
  });

  it('item 5: the resolve texts nobody; "I\'m safe" afterwards still tells each contact who was texted, once', async () => {
    const p = phone();
    const a = await armWithContacts(v, 'resolve-cat', [p], { durationSeconds: 1 }, 'Cat');
    await expireAndSweep(v, a.expiresAt);
    await dispatchRound(v);
    const incidentId = (await v.api(a.token, 'GET', `/v1/timers/${a.timerId}`)).body.timer.incidentId as string;
    const r = await v.api(v.token('mod-silent', { admin: true }), 'POST', `/v1/admin/incidents/${incidentId}/resolve`);
    expect(r.body.incident.allClear).toBeUndefined();
    await dispatchRound(v);
    expect(carrier.kindsTo(p)).toEqual(['sos']);

    const safe = await v.api(a.token, 'POST', `/v1/timers/${a.timerId}/safe`);
    expect(safe.status).toBe(200);
    expect(safe.body.incident.status).toBe('resolved');
    expect(['pending', 'done']).toContain(safe.body.incident.allClear); // owed by this request, completed by it
    await dispatchRound(v);
    expect(carrier.kindsTo(p)).toEqual(['sos', 'all_clear']);
    expect(carrier.sent.at(-1)?.body).toMatch(/checked in and says they are safe/);
    expect((await v.api(a.token, 'POST', `/v1/timers/${a.timerId}/safe`)).status).toBe(200);
    await dispatchRound(v);
    expect(carrier.kindsTo(p)).toEqual(['sos', 'all_clear']);
  });
});
