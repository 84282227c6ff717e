/**
 * Carrier faults end to end: a real in-process Vigil on its own cron ticks, its carriers
 * chosen by its own config from env, the real `twilio` client and `fetch` against the
 * local fakes. Figures (attempts per delivery, time to fail over) are printed; the count of
 * messages Twilio accepted per delivery is asserted (the fake, like Twilio, dedupes nothing).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeFast2Sms } from '../helpers/fake-fast2sms.js';
import { FakeTwilio } from '../helpers/fake-twilio.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { seeded } from '../helpers/random.js';
import {
  armWithContacts,
  dispatchRound,
  expireAndSweep,
  fast2smsEnv,
  incidentOf,
  incidents,
  LossyProxy,
  twilioEnv,
  type IncidentView,
} from './sms-support.js';

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.reverse()) await s();
  stops.length = 0;
});

const settled = (s: string) => s === 'sent' || s === 'dead' || s === 'failed' || s === 'delivered';

describe('retryable faults (30%: 500s, hangs and lost answers)', () => {
  it('every delivery ends sent or dead, and at most one message per delivery reaches Twilio after ambiguous failures', async () => {
    const tw = await FakeTwilio.start();
    stops.push(() => tw.close());
    // 20% fail at the carrier before anything is accepted (500 or a request left hanging) …
    tw.failRatio(0.2, ['500', 'timeout'], seeded(7));
    // … and 12.5% of the rest are accepted, but the answer is lost: an ambiguous timeout
    const proxy = await LossyProxy.start(tw.url, 0.125, seeded(11));
    stops.push(() => proxy.close());
    const v = await startTestVigil({
      ...twilioEnv(tw, proxy.url),
      // short enough that a hang costs little; long enough that a busy test machine (one
      // event loop for Vigil, the proxy and the fake) does not turn good answers into timeouts
      TWILIO_TIMEOUT_MS: '1000',
      DELIVERY_MAX_IN_FLIGHT: '20',
      DELIVERY_BACKOFF_BASE_MS: '20',
      DELIVERY_BACKOFF_CAP_MS: '200',
    });
    stops.push(() => v.stop());

    const INCIDENTS = 20;
    const CONTACTS = 3;
    const phone = (i: number, c: number) => `+1415556${String(i).padStart(2, '0')}${String(c).padStart(2, '0')}`;
    const timers = await Promise.all(
      Array.from({ length: INCIDENTS }, (_, i) =>
        armWithContacts(
          v,
          `fault-${i}`,
          Array.from({ length: CONTACTS }, (_, c) => phone(i, c)),
        ),
      ),
    );

    const all = await eventually(
      async () => {
        const list = (await incidents(v)).filter((i) => timers.some((t) => t.timerId === i.timerId));
        const ds = list.flatMap((i) => i.deliveries);
        return list.length === INCIDENTS && ds.length === INCIDENTS * CONTACTS && ds.every((d) => settled(d.status)) ? list : undefined;
      },
      'every delivery to settle',
      60_000,
      200,
    );
    const deliveries = all.flatMap((i: IncidentView) => i.deliveries);

    expect(deliveries.every((d) => d.status === 'sent' || d.status === 'dead')).toBe(true);
    // the attempt is counted in the store before the carrier is called: never a create without
    // a counted attempt (an attempt may count without a create: it timed out before reaching
    // Twilio, or it was a lookup)
    const attempts = deliveries.map((d) => d.attempts);
    expect(tw.requests.length).toBeLessThanOrEqual(attempts.reduce((a, b) => a + b, 0));
    expect(tw.requests.length).toBeGreaterThan(0);
    // Twilio does not dedupe: count what it accepted per delivery (one number per delivery here)
    const perDelivery = deliveries.map((d) => ({ d, accepted: tw.acceptedFor(d.phone) }));
    const duplicates = perDelivery.reduce((n, x) => n + Math.max(0, x.accepted.length - 1), 0);
    for (const { d, accepted } of perDelivery) {
      // however many answers were lost, the retries looked before creating again …
      expect(accepted.length).toBeLessThanOrEqual(1);
      // … and a sent delivery records the one message Twilio holds
      if (d.status === 'sent') expect(accepted).toHaveLength(1);
    }
    expect(duplicates).toBe(0);
    const sids = await Promise.all(deliveries.map(async (d) => (await v.vigil.store.getDelivery(d.key))?.providerMessageId));
    deliveries.forEach((d, i) => {
      if (d.status === 'sent') expect(sids[i]).toBe(tw.acceptedFor(d.phone)[0]?.sid);
    });

    const totalAttempts = attempts.reduce((a, b) => a + b, 0);
    // deliveries for which a lookup found the message at Twilio (instead of a second create)
    const found = new Set(tw.lookups.filter((l) => l.status === 200 && l.returned > 0).map((l) => l.query.To)).size;
    const failedAtCarrier = tw.requests.filter((r) => r.status !== 201).length;
    const sent = deliveries.filter((d) => d.status === 'sent').length;
    // attempts that failed for none of the injected reasons: answers slower than the timeout on a busy machine
    const slow = totalAttempts - sent - failedAtCarrier - proxy.dropped;
    const observedFaultRatio = (failedAtCarrier + proxy.dropped) / tw.requests.length;
    const mean = totalAttempts / attempts.length;
    const max = Math.max(...attempts);
    const hist = attempts.reduce<Record<number, number>>((h, a) => ({ ...h, [a]: (h[a] ?? 0) + 1 }), {});
    console.log(
      `30% fault mix (nominal: 20% 500/hang at Twilio + 12.5% of the rest accepted with the answer lost): ${deliveries.length} deliveries, ` +
        `${totalAttempts} attempts, ${tw.requests.length} creates; injected faults ${(observedFaultRatio * 100).toFixed(1)}% ` +
        `(${failedAtCarrier} 500/hang, ${proxy.dropped} accepted-but-answer-lost), other timeouts ${slow}; ` +
        `attempts per delivery mean ${mean.toFixed(2)}, max ${max}, histogram ${JSON.stringify(hist)}; ` +
        `sent ${sent}, dead ${deliveries.length - sent}; accepted by Twilio ${tw.accepted.length} (duplicates ${duplicates}); ` +
        `lookups ${tw.lookups.length} (answered ${tw.lookups.filter((l) => l.status === 200).length}), ` +
        `deliveries whose message a lookup found ${found}`,
    );
    // the fault mix really bit: some deliveries needed retries, and some lost answers were found by a lookup
    expect(max).toBeGreaterThan(1);
    expect(proxy.dropped).toBeGreaterThan(0);
    expect(found).toBeGreaterThan(0);
  });
});

describe('at most one message per delivery after an ambiguous failure (the dispatcher and the real Twilio client)', () => {
  it('an answer lost after acceptance, then a failed lookup: the delivery ends sent with the SID Twilio holds, one message', async () => {
    const tw = await FakeTwilio.start();
    stops.push(() => tw.close());
    const v = await startTestVigil(
      { ...twilioEnv(tw), DELIVERY_BACKOFF_BASE_MS: '20', DELIVERY_BACKOFF_CAP_MS: '50' },
      { manualTicks: true },
    );
    stops.push(() => v.stop());
    const phone = '+14155557001';
    const a = await armWithContacts(v, 'lost-answer', [phone]);
    await expireAndSweep(v, a.expiresAt);

    tw.loseAnswers(1); // attempt 1: Twilio accepts, the connection is reset before the answer
    await dispatchRound(v);
    expect((await incidentOf(v, a.timerId)).deliveries[0]).toMatchObject({ status: 'pending', attempts: 1, lastError: 'net_econnreset' });
    expect(tw.acceptedFor(phone)).toHaveLength(1);
    tw.failNext(2, 503); // the lookups of attempts 2 and 3 fail: nothing may be created meanwhile
    const d = await eventually(
      async () => {
        await dispatchRound(v);
        const i = await incidentOf(v, a.timerId);
        return i.deliveries[0]?.status === 'sent' ? i.deliveries[0] : undefined;
      },
      'the delivery to be sent',
      15_000,
      20,
    );

    expect(d.attempts).toBe(4);
    expect(tw.requests.filter((r) => r.to === phone)).toHaveLength(1);
    expect(tw.acceptedFor(phone)).toHaveLength(1);
    expect(tw.lookups.map((l) => l.status)).toEqual([503, 503, 200]);
    expect((await v.vigil.store.getDelivery(d.key))?.providerMessageId).toBe(tw.acceptedFor(phone)[0]?.sid);
  });
});

describe('failover: Twilio down → Fast2SMS carries the alert', () => {
  const IN = ['+919876543210', '+919812345678', '+917012345678'];

  async function run(mode: 'unavailable' | 'hanging'): Promise<void> {
    const [tw, f2] = await Promise.all([FakeTwilio.start(), FakeFast2Sms.start()]);
    stops.push(() => Promise.all([tw.close(), f2.close()]).then(() => undefined));
    if (mode === 'unavailable') tw.down(true);
    else tw.failRatio(1, ['timeout']);
    const v: TestVigil = await startTestVigil({
      ...twilioEnv(tw),
      ...fast2smsEnv(f2),
      TWILIO_TIMEOUT_MS: '300',
      SMS_PRIMARY: 'twilio',
      SMS_FAILOVER_THRESHOLD: '3',
      DELIVERY_BACKOFF_BASE_MS: '20',
      DELIVERY_BACKOFF_CAP_MS: '200',
    });
    stops.push(() => v.stop());
    expect(v.vigil.carrier.name).toBe('failover');

    const a = await armWithContacts(v, `failover-${mode}`, IN, { durationSeconds: 1, locationName: 'Koramangala' }, 'Asha');
    const inc = await eventually(
      async () => {
        const i = (await incidents(v)).find((x) => x.timerId === a.timerId);
        return i && i.deliveries.length === IN.length && i.deliveries.every((d) => d.status === 'sent') ? i : undefined;
      },
      'all three SOS texts sent',
      30_000,
      50,
    );

    // Fast2SMS carried every one, and the carrier is recorded on the delivery
    expect(inc.deliveries.map((d) => d.carrier)).toEqual(['fast2sms', 'fast2sms', 'fast2sms']);
    expect(f2.accepted.map((m) => m.numbers[0]).sort()).toEqual(IN.map((p) => p.slice(3)).sort());
    expect(f2.accepted.every((m) => m.message.includes('Asha') && m.message.includes('Koramangala'))).toBe(true);
    expect(tw.accepted).toHaveLength(0);
    expect(new Set(f2.accepted.map((m) => m.idempotencyKey))).toEqual(new Set(inc.deliveries.map((d) => d.key)));
    const metrics = await (await fetch(`${v.url}/metrics`)).text();
    expect(metrics).toMatch(/^vigil_carrier_circuit_state\{[^}]*\} 1$/m);

    const created = Date.parse(inc.createdAt);
    const sentAt = inc.deliveries.map((d) => Date.parse(d.updatedAt) - created).sort((x, y) => x - y);
    console.log(
      `failover (Twilio ${mode === 'unavailable' ? 'answering 503' : 'hanging, 300 ms timeout'}): incident → first SMS via Fast2SMS ${sentAt[0]} ms, ` +
        `→ all ${IN.length} ${sentAt[sentAt.length - 1]} ms; Twilio requests ${tw.requests.length}, attempts ${JSON.stringify(inc.deliveries.map((d) => d.attempts))}`,
    );
  }

  it('Twilio answering 503 to everything', () => run('unavailable'));
  it('Twilio accepting connections and never answering', () => run('hanging'));
});
