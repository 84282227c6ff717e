/**
 * Deliveries end to end through the real Twilio client: a real in-process Vigil (its own
 * config chooses TwilioCarrier from TWILIO_* env) against the local fake Twilio. Ticks
 * are driven by hand so "the first dispatch round" means exactly one `tick()`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SMS_CHARS, mapLink } from '../../src/domain/messages.js';
import { FakeTwilio } from '../helpers/fake-twilio.js';
import { connect } from '../helpers/sockets.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { armWithContacts, dispatchRound, expireAndSweep, incidentOf, sleep, twilioEnv } from './sms-support.js';

let tw: FakeTwilio;
let v: TestVigil;

beforeAll(async () => {
  tw = await FakeTwilio.start();
  v = await startTestVigil(
    { ...twilioEnv(tw), DELIVERY_MAX_ATTEMPTS: '3', DELIVERY_BACKOFF_BASE_MS: '20', DELIVERY_BACKOFF_CAP_MS: '200' },
    { manualTicks: true },
  );
});
afterAll(async () => {
  await v?.stop();
  await tw?.close();
});

describe('SOS deliveries through Twilio', () => {
  const phones = ['+14155550101', '+14155550102', '+14155550103', '+14155550104', '+14155550105'];
  const invalid = '+14155550103';
  const place = 'Blue Bottle Café, Mission St';
  const where = { lat: 12.9716, lng: 77.5946 };

  it('invariant 5: one invalid number among five contacts does not delay the other four', async () => {
    tw.invalidNumbers.add(invalid);
    const a = await armWithContacts(v, 'priya', phones, { durationSeconds: 1, locationName: place, location: where }, 'Priya Raman');
    await expireAndSweep(v, a.expiresAt);

    // first dispatch round: all five are claimed and sent concurrently
    expect(await dispatchRound(v)).toBe(5);
    const inc = await incidentOf(v, a.timerId);
    const byPhone = new Map(inc.deliveries.map((d) => [d.phone, d]));
    for (const p of phones.filter((p) => p !== invalid)) {
      expect(byPhone.get(p)).toMatchObject({ kind: 'sos', status: 'sent', attempts: 1, carrier: 'twilio' });
    }
    expect(byPhone.get(invalid)).toMatchObject({ status: 'failed', attempts: 1, lastError: 'twilio_21211' });

    // a permanent failure is not retried: later rounds claim nothing and Twilio is not asked again
    await sleep(250); // longer than any backoff of this config
    expect(await dispatchRound(v)).toBe(0);
    expect(tw.requests.filter((r) => r.to === invalid)).toHaveLength(1);
    expect((await incidentOf(v, a.timerId)).deliveries.find((d) => d.phone === invalid)).toMatchObject({ status: 'failed', attempts: 1 });

    // one create per delivery, none of them a lookup: nothing was ambiguous
    for (const d of inc.deliveries) {
      expect(tw.requests.filter((r) => r.to === d.phone)).toHaveLength(1);
      expect(d.key).toBe(`${inc.id}:${d.contactId}`);
    }
    expect(tw.lookups).toHaveLength(0);
  });

  it('the SOS text names the person and the place, links the map and gives the deadline that passed', async () => {
    const sent = tw.accepted.filter((m) => m.to === '+14155550101');
    expect(sent).toHaveLength(1);
    const body = sent[0]!.body;
    const timer = (await v.api(v.token('priya'), 'GET', '/v1/timers?status=expired')).body.timers[0] as { expiresAt: string };
    const deadline = `${timer.expiresAt.slice(0, 16).replace('T', ' ')} UTC`;
    expect(body).toContain('Priya Raman');
    expect(body).toContain(place);
    expect(body).toContain(mapLink(where));
    expect(body).toContain('https://maps.google.com/?q=12.97160,77.59460');
    expect(body).toContain(deadline);
    expect(body.length).toBeLessThanOrEqual(MAX_SMS_CHARS);
    // the same text went to every contact
    expect(new Set(tw.requests.filter((r) => r.to?.startsWith('+1415555010')).map((r) => r.body)).size).toBe(1);
  });

  it('I am safe after the SOS: each contact that was sent the SOS gets the all-clear, the invalid number none', async () => {
    const timer = (await v.api(v.token('priya'), 'GET', '/v1/timers?status=expired')).body.timers[0] as { id: string };
    const r = await v.api(v.token('priya', { name: 'Priya Raman' }), 'POST', `/v1/timers/${timer.id}/safe`);
    expect(r.status).toBe(200);
    expect(r.body.incident.status).toBe('false_alarm');
    expect(await dispatchRound(v)).toBe(4);
    const inc = await incidentOf(v, timer.id);
    const clear = inc.deliveries.filter((d) => d.kind === 'all_clear');
    expect(clear).toHaveLength(4);
    expect(clear.every((d) => d.status === 'sent')).toBe(true);
    expect(clear.map((d) => d.phone)).not.toContain(invalid);
    expect(tw.requests.filter((m) => m.to === invalid)).toHaveLength(1);
    const followUp = tw.accepted.filter((m) => m.to === '+14155550102').map((m) => m.body);
    expect(followUp).toHaveLength(2);
    expect(followUp[1]).toContain('Priya Raman has checked in and says they are safe');
  });

  it('dead letter: always-retryable failures end `dead` after DELIVERY_MAX_ATTEMPTS, visible to moderators, in the API and in metrics', async () => {
    const mod = await connect(v.url, v.token('mod-dead', { admin: true }));
    try {
      tw.down(true); // every request answers 503
      const phone = '+14155550199';
      const a = await armWithContacts(v, 'dana', [phone], { durationSeconds: 1 }, 'Dana');
      await expireAndSweep(v, a.expiresAt);
      const inc = await eventually(
        async () => {
          await dispatchRound(v);
          const i = await incidentOf(v, a.timerId);
          return i.deliveries[0]?.status === 'dead' ? i : undefined;
        },
        'the delivery to be dead',
        15_000,
        50,
      );

      expect(inc.deliveries[0]).toMatchObject({ status: 'dead', attempts: 3, lastError: 'http_503', carrier: 'twilio' });
      const attempts = tw.requests.filter((r) => r.to === phone);
      expect(attempts).toHaveLength(3);
      // a 503 is an answer, not an ambiguity: no retry looked the message up first
      expect(tw.lookups.filter((l) => l.query.To === phone)).toHaveLength(0);

      // the moderator socket hears it, with the number masked
      const dead = await eventually(
        async () => mod.named('delivery.updated').find((p) => (p.delivery as { status: string; key: string }).status === 'dead'),
        'delivery.updated dead at the moderator',
      );
      expect(dead.delivery).toMatchObject({ key: inc.deliveries[0]!.key, status: 'dead', attempts: 3, lastError: 'http_503' });
      expect(JSON.stringify(dead)).not.toContain('5550199');
      expect(
        mod
          .named('delivery.updated')
          .filter((p) => (p.delivery as { key: string }).key === inc.deliveries[0]!.key)
          .map((p) => (p.delivery as { status: string }).status),
      ).toEqual(['pending', 'pending', 'dead']);

      const metrics = await (await fetch(`${v.url}/metrics`)).text();
      expect(metrics).toMatch(/^vigil_deliveries_total\{[^}]*carrier="twilio"[^}]*outcome="dead"[^}]*\} 1$/m);
      expect(metrics).toMatch(/^vigil_deliveries_dead\{[^}]*\} 1$/m);

      // dead is final: nothing claims it again
      tw.down(false);
      await sleep(250);
      expect(await dispatchRound(v)).toBe(0);
      expect(tw.requests.filter((r) => r.to === phone)).toHaveLength(3);
    } finally {
      tw.down(false);
      mod.close();
    }
  });
});
