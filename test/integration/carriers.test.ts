/**
 * Carriers against local fakes: the real `twilio` client (via our RequestClient subclass)
 * against fake Twilio, fetch against fake Fast2SMS, and the failover breaker over both.
 * Everything talks to 127.0.0.1 only.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FailoverCarrier, type CircuitState } from '../../src/sms/failover.js';
import { Fast2SmsCarrier } from '../../src/sms/fast2sms.js';
import type { AttemptResult } from '../../src/domain/delivery.js';
import type { OutgoingSms } from '../../src/sms/port.js';
import { TwilioCarrier, type TwilioCarrierOptions } from '../../src/sms/twilio.js';
import { FakeFast2Sms } from '../helpers/fake-fast2sms.js';
import { FakeTwilio, HttpFake } from '../helpers/fake-twilio.js';

const FROM = '+15005550006';
const US = '+14155550100';
const IN = '+919876543210';

let tw: FakeTwilio;
let f2: FakeFast2Sms;

beforeEach(async () => {
  [tw, f2] = await Promise.all([FakeTwilio.start(), FakeFast2Sms.start()]);
});
afterEach(async () => {
  await Promise.all([tw.close(), f2.close()]);
});

const twilioCarrier = (o: Partial<TwilioCarrierOptions> = {}): TwilioCarrier =>
  new TwilioCarrier({ accountSid: tw.accountSid, authToken: tw.authToken, from: FROM, baseUrl: tw.url, timeoutMs: 2000, ...o });
const fast2sms = (timeoutMs = 2000): Fast2SmsCarrier => new Fast2SmsCarrier({ apiKey: f2.apiKey, baseUrl: f2.url, timeoutMs });
const sms = (key: string, to = US, body = 'SOS from Vigil: test'): OutgoingSms => ({ to, body, idempotencyKey: key });
/** the same text again, as the dispatcher retries it after an attempt that ended with `lastError` */
const retryOf = (m: OutgoingSms, lastError: string, since: Date): OutgoingSms => ({ ...m, earlier: { lastError, since } });

/** a loopback port with nothing listening */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('TwilioCarrier (real twilio client → fake Twilio)', () => {
  it('sends with basic auth and records to, body, sender and status callback', async () => {
    const carrier = twilioCarrier({ statusCallbackUrl: 'http://127.0.0.1:9/receipts' });
    const r = await carrier.send(sms('inc1:c1'));
    expect(r).toEqual({ ok: true, carrier: 'twilio', providerMessageId: expect.stringMatching(/^SM[0-9a-f]{32}$/) });
    expect(tw.requests).toHaveLength(1);
    expect(tw.requests[0]).toMatchObject({
      authorized: true,
      to: US,
      from: FROM,
      body: 'SOS from Vigil: test',
      statusCallback: 'http://127.0.0.1:9/receipts',
      status: 201,
    });
    expect(tw.accepted.map((m) => m.sid)).toEqual([r.ok ? r.providerMessageId : '']);
    expect(tw.lookups).toHaveLength(0);
  });

  it('uses MessagingServiceSid when the sender is a Messaging Service', async () => {
    const r = await twilioCarrier({ from: 'MG0123456789abcdef0123456789abcdef' }).send(sms('k'));
    expect(r.ok).toBe(true);
    expect(tw.requests[0]).toMatchObject({ messagingServiceSid: 'MG0123456789abcdef0123456789abcdef' });
    expect(tw.requests[0]?.from).toBeUndefined();
  });

  it('an invalid number is permanent (twilio_21211)', async () => {
    tw.invalidNumbers.add(US);
    expect(await twilioCarrier().send(sms('k'))).toEqual({ ok: false, carrier: 'twilio', retryable: false, code: 'twilio_21211' });
  });

  it('500 and 503 are retryable, and a retry after an error answer sends without looking first', async () => {
    const carrier = twilioCarrier();
    const since = new Date();
    tw.failNext(1, 500);
    tw.failNext(1, 503);
    expect(await carrier.send(sms('k'))).toEqual({ ok: false, carrier: 'twilio', retryable: true, code: 'http_500' });
    expect(await carrier.send(retryOf(sms('k'), 'http_500', since))).toMatchObject({ ok: false, retryable: true, code: 'http_503' });
    expect(await carrier.send(retryOf(sms('k'), 'http_503', since))).toMatchObject({ ok: true });
    expect(tw.accepted).toHaveLength(1);
    expect(tw.requests).toHaveLength(3);
    expect(tw.lookups).toHaveLength(0);
  });

  it('429 is retryable (and the client does not retry on its own)', async () => {
    tw.failRatio(1, ['429']);
    expect(await twilioCarrier().send(sms('k'))).toEqual({ ok: false, carrier: 'twilio', retryable: true, code: 'http_429' });
    expect(tw.requests).toHaveLength(1);
  });

  it('like Twilio, the fake has no idempotency: the same create twice, whatever the headers, is two messages', async () => {
    const auth = `Basic ${Buffer.from(`${tw.accountSid}:${tw.authToken}`).toString('base64')}`;
    const create = () =>
      fetch(`${tw.url}/2010-04-01/Accounts/${tw.accountSid}/Messages.json`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded', 'I-Twilio-Idempotency-Token': 'inc1:c1' },
        body: new URLSearchParams({ To: US, From: FROM, Body: 'same' }).toString(),
      });
    expect((await create()).status).toBe(201);
    expect((await create()).status).toBe(201);
    const carrier = twilioCarrier();
    await carrier.send(sms('inc1:c1'));
    await carrier.send(sms('inc1:c1'));
    expect(tw.accepted).toHaveLength(4);
    expect(new Set(tw.accepted.map((m) => m.sid)).size).toBe(4);
  });

  it('an answer slower than timeoutMs is a retryable timeout', async () => {
    tw.slow(1500);
    expect(await twilioCarrier({ timeoutMs: 300 }).send(sms('k'))).toEqual({
      ok: false,
      carrier: 'twilio',
      retryable: true,
      code: 'timeout',
    });
    // the fake accepted it before answering late: an ambiguous timeout
    expect(tw.accepted).toHaveLength(1);
  });

  it('a request that never gets an answer is a retryable timeout', async () => {
    tw.failRatio(1, ['timeout']);
    expect(await twilioCarrier({ timeoutMs: 300 }).send(sms('k'))).toMatchObject({ ok: false, retryable: true, code: 'timeout' });
  });

  it('wrong credentials are permanent (twilio_20003)', async () => {
    const r = await twilioCarrier({ authToken: 'not-the-token' }).send(sms('k'));
    expect(r).toEqual({ ok: false, carrier: 'twilio', retryable: false, code: 'twilio_20003' });
    expect(tw.requests[0]?.authorized).toBe(false);
  });

  it('connection refused and connection reset are retryable', async () => {
    const refused = await twilioCarrier({ baseUrl: `http://127.0.0.1:${await deadPort()}` }).send(sms('k'));
    expect(refused).toEqual({ ok: false, carrier: 'twilio', retryable: true, code: 'net_econnrefused' });
    tw.down(true, 'reset');
    expect(await twilioCarrier().send(sms('k'))).toEqual({ ok: false, carrier: 'twilio', retryable: true, code: 'net_econnreset' });
  });

  it("with HTTP_PROXY set the library's own path sends (same auth, fields and outcome codes)", async () => {
    const before = process.env.HTTP_PROXY;
    // read at construction (the library builds its proxy agent) and at every request; the
    // library's axios call sets `proxy: false`, so a plain-http target is reached directly
    process.env.HTTP_PROXY = 'http://127.0.0.1:9';
    try {
      // config.ts reads HTTP_PROXY and hands it to the carrier
      const carrier = twilioCarrier({ httpProxy: process.env.HTTP_PROXY });
      expect(await carrier.send(sms('k1'))).toEqual({ ok: true, carrier: 'twilio', providerMessageId: expect.stringMatching(/^SM/) });
      expect(tw.requests[0]).toMatchObject({ authorized: true, to: US, from: FROM, body: 'SOS from Vigil: test', status: 201 });
      tw.failNext(1, 500);
      expect(await carrier.send(sms('k2'))).toEqual({ ok: false, carrier: 'twilio', retryable: true, code: 'http_500' });
    } finally {
      if (before === undefined) delete process.env.HTTP_PROXY;
      else process.env.HTTP_PROXY = before;
    }
  });

  it('concurrent sends do not mix up recipients and bodies', async () => {
    const carrier = twilioCarrier();
    tw.slow(20);
    const n = 25;
    const to = (i: number) => `+1415555${String(i).padStart(4, '0')}`;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => carrier.send(sms(`inc:${i}`, to(i), `text ${i}`))));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(tw.accepted).toHaveLength(n);
    for (const m of tw.accepted) expect(m.body).toBe(`text ${Number(m.to.slice(-4))}`);
    results.forEach((r, i) => expect(r.ok && tw.accepted.find((m) => m.sid === r.providerMessageId)?.to).toBe(to(i)));
  });
});

describe("TwilioCarrier's transport (node:http under the twilio client) → a raw local server", () => {
  /** a loopback server answering every request with `handler` (the fakes' own HttpFake) */
  async function rawServer(handler: (res: ServerResponse, http: HttpFake) => void): Promise<HttpFake> {
    const http: HttpFake = new HttpFake((_req, res) => handler(res, http));
    await http.listen();
    return http;
  }
  const carrierAt = (url: string, timeoutMs = 2000): TwilioCarrier =>
    new TwilioCarrier({ accountSid: 'AC' + '0'.repeat(32), authToken: 'token', from: FROM, baseUrl: url, timeoutMs });

  it('the deadline covers the whole answer: headers at once and a body trickling past timeoutMs is a retryable timeout', async () => {
    const server = await rawServer((res, http) => {
      res.writeHead(201, { 'Content-Type': 'application/json' });
      res.write('{"sid":');
      http.later(1500, () => res.end('"SM' + '1'.repeat(32) + '"}'));
    });
    try {
      expect(await carrierAt(server.url, 300).send(sms('k'))).toEqual({ ok: false, carrier: 'twilio', retryable: true, code: 'timeout' });
    } finally {
      await server.close();
    }
  });

  it('an answer cut short mid-body is an ambiguous reset (the retry looks first), not a parse error', async () => {
    const server = await rawServer((res, http) => {
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': '200' });
      res.write('{"sid":"SM');
      http.later(20, () => res.socket?.destroy());
    });
    try {
      expect(await carrierAt(server.url).send(sms('k'))).toEqual({ ok: false, carrier: 'twilio', retryable: true, code: 'net_econnreset' });
    } finally {
      await server.close();
    }
  });

  it('an HTML error page from a proxy (502) is a retryable http_502', async () => {
    const server = await rawServer((res) => {
      res.writeHead(502, { 'Content-Type': 'text/html' });
      res.end('<html><body>Bad Gateway</body></html>');
    });
    try {
      expect(await carrierAt(server.url).send(sms('k'))).toEqual({ ok: false, carrier: 'twilio', retryable: true, code: 'http_502' });
    } finally {
      await server.close();
    }
  });
});

describe('at most one message per delivery after an ambiguous failure (deliveries are per recipient and idempotent)', () => {
  it('an answer lost after acceptance (connection reset): the retry finds the message and records its SID', async () => {
    const carrier = twilioCarrier();
    const since = new Date();
    tw.loseAnswers(1);
    const first = await carrier.send(sms('inc1:c1'));
    expect(first).toEqual({ ok: false, carrier: 'twilio', retryable: true, code: 'net_econnreset' });
    expect(tw.accepted).toHaveLength(1);

    const retry = await carrier.send(retryOf(sms('inc1:c1'), 'net_econnreset', since));
    expect(retry).toEqual({ ok: true, carrier: 'twilio', providerMessageId: tw.accepted[0]?.sid });
    expect(tw.accepted).toHaveLength(1);
    expect(tw.requests).toHaveLength(1);
    // Twilio's list, filtered by recipient, sender and day (GMT), as the client sends it
    expect(tw.lookups).toHaveLength(1);
    expect(tw.lookups[0]?.query).toMatchObject({ To: US, From: FROM, 'DateSent>': expect.stringMatching(/^\d{4}-\d{2}-\d{2}T00:00:00Z$/) });
  });

  it('an answer slower than the timeout: the retry finds the message instead of sending it again', async () => {
    const carrier = twilioCarrier({ timeoutMs: 300 });
    const since = new Date();
    tw.slow(1500);
    expect(await carrier.send(sms('k'))).toMatchObject({ ok: false, code: 'timeout' });
    tw.slow(0);
    expect(await carrier.send(retryOf(sms('k'), 'timeout', since))).toEqual({
      ok: true,
      carrier: 'twilio',
      providerMessageId: tw.accepted[0]?.sid,
    });
    expect(tw.accepted).toHaveLength(1);
  });

  it('an attempt whose outcome was never recorded (crash, lapsed lease) is looked up too', async () => {
    const carrier = twilioCarrier();
    const since = new Date();
    const first = await carrier.send(sms('k'));
    const retry = await carrier.send({ ...sms('k'), earlier: { since } });
    expect(retry).toEqual(first);
    expect(tw.accepted).toHaveLength(1);
  });

  it('a lookup that finds nothing sends again', async () => {
    const carrier = twilioCarrier({ timeoutMs: 300 });
    const since = new Date();
    tw.failRatio(1, ['timeout']); // the request hangs before anything is accepted
    expect(await carrier.send(sms('k'))).toMatchObject({ ok: false, code: 'timeout' });
    expect(tw.accepted).toHaveLength(0);
    tw.failRatio(0, []);
    const retry = await carrier.send(retryOf(sms('k'), 'timeout', since));
    expect(retry).toEqual({ ok: true, carrier: 'twilio', providerMessageId: tw.accepted[0]?.sid });
    expect(tw.lookups.map((l) => l.returned)).toEqual([0]);
    expect(tw.requests).toHaveLength(2);
    expect(tw.accepted).toHaveLength(1);
  });

  it('a lookup that fails is a retryable failure, not "not sent": nothing is created until a lookup answers', async () => {
    const carrier = twilioCarrier({ timeoutMs: 300 });
    const since = new Date();
    tw.loseAnswers(1);
    expect(await carrier.send(sms('k'))).toMatchObject({ ok: false, code: 'net_econnreset' });
    tw.failNext(1, 503);
    expect(await carrier.send(retryOf(sms('k'), 'net_econnreset', since))).toEqual({
      ok: false,
      carrier: 'twilio',
      retryable: true,
      code: 'lookup_http_503',
    });
    tw.failRatio(1, ['timeout']);
    expect(await carrier.send(retryOf(sms('k'), 'lookup_http_503', since))).toEqual({
      ok: false,
      carrier: 'twilio',
      retryable: true,
      code: 'lookup_timeout',
    });
    tw.failRatio(0, []);
    expect(tw.requests).toHaveLength(1);
    expect(await carrier.send(retryOf(sms('k'), 'lookup_timeout', since))).toEqual({
      ok: true,
      carrier: 'twilio',
      providerMessageId: tw.accepted[0]?.sid,
    });
    expect(tw.accepted).toHaveLength(1);
  });

  it('only our exact body counts, and only from the creation of the delivery on (less clock skew)', async () => {
    const carrier = twilioCarrier({ timeoutMs: 200 });
    await carrier.send(sms('other', US, 'a different text'));
    await carrier.send(sms('old', US, 'SOS from Vigil: test'));
    // the identical text went out an hour before this delivery existed (another incident)
    tw.accepted[1]!.dateCreated = new Date(Date.now() - 3_600_000);
    const since = new Date();
    tw.failRatio(1, ['timeout']); // nothing accepted this time
    expect(await carrier.send(sms('k'))).toMatchObject({ ok: false, code: 'timeout' });
    tw.failRatio(0, []);
    const r = await carrier.send(retryOf(sms('k'), 'timeout', since));
    expect(tw.lookups.map((l) => l.returned)).toEqual([2]);
    expect(tw.accepted).toHaveLength(3);
    expect(r).toEqual({ ok: true, carrier: 'twilio', providerMessageId: tw.accepted[2]?.sid });
  });

  it('the lookup reads every page of the Twilio list (newest first)', async () => {
    const carrier = twilioCarrier();
    const since = new Date();
    tw.loseAnswers(1);
    await carrier.send(sms('k', US, 'the SOS'));
    const target = tw.accepted[0]!;
    await Promise.all(Array.from({ length: 60 }, (_, i) => carrier.send(sms(`n${i}`, US, `later text ${i}`))));
    expect(await carrier.send(retryOf(sms('k', US, 'the SOS'), 'net_econnreset', since))).toEqual({
      ok: true,
      carrier: 'twilio',
      providerMessageId: target.sid,
    });
    expect(tw.lookups.map((l) => l.returned)).toEqual([50, 11]);
  });

  it('with a Messaging Service sender the lookup filters by recipient only (the service picks the number)', async () => {
    const carrier = twilioCarrier({ from: 'MG0123456789abcdef0123456789abcdef' });
    const since = new Date();
    tw.loseAnswers(1);
    await carrier.send(sms('k'));
    expect(await carrier.send(retryOf(sms('k'), 'net_econnreset', since))).toMatchObject({
      ok: true,
      providerMessageId: tw.accepted[0]?.sid,
    });
    expect(tw.lookups[0]?.query.From).toBeUndefined();
  });

  /** Ten deliveries driven like the dispatcher drives them (up to 6 attempts); `ambiguous` spoils each first attempt. */
  async function duplicates(
    carrier: TwilioCarrier,
    ambiguous: { before: () => void; after: () => void },
    lookup: boolean,
  ): Promise<{ perDelivery: number[]; sent: number }> {
    const n = 10;
    const to = (i: number) => `+1415557${String(i).padStart(4, '0')}`;
    const text = (i: number) => sms(`d:${i}`, to(i), `SOS ${i}`);
    tw.accepted.length = 0;
    let sent = 0;
    for (let i = 0; i < n; i++) {
      const since = new Date();
      ambiguous.before();
      let r = await carrier.send(text(i));
      ambiguous.after();
      for (let attempt = 2; attempt <= 6 && !r.ok && r.retryable; attempt++) {
        r = await carrier.send(lookup ? retryOf(text(i), r.code, since) : text(i));
      }
      if (r.ok) sent++;
    }
    return { perDelivery: Array.from({ length: n }, (_, i) => tw.acceptedFor(to(i)).length), sent };
  }
  const dups = (r: { perDelivery: number[] }): number => r.perDelivery.reduce((a, b) => a + Math.max(0, b - 1), 0);

  it('answers lost after acceptance: exactly one accepted message per delivery with the lookup, more without', async () => {
    const lose = { before: () => tw.loseAnswers(1), after: () => {} };
    const without = await duplicates(twilioCarrier(), lose, false);
    const withLookup = await duplicates(twilioCarrier(), lose, true);
    console.log(
      `answers lost after acceptance, 10 deliveries: duplicates without lookup ${dups(without)}, with lookup ${dups(withLookup)}`,
    );
    expect(without.sent).toBe(10);
    expect(withLookup.sent).toBe(10);
    expect(withLookup.perDelivery).toEqual(Array(10).fill(1));
    expect(dups(withLookup)).toBeLessThan(dups(without));
  });

  it('answers slower than the timeout: fewer duplicates with the lookup than without', async () => {
    const late = { before: () => tw.slow(800), after: () => tw.slow(0) };
    const without = await duplicates(twilioCarrier({ timeoutMs: 250 }), late, false);
    const withLookup = await duplicates(twilioCarrier({ timeoutMs: 250 }), late, true);
    console.log(
      `answers slower than the timeout, 10 deliveries: duplicates without lookup ${dups(without)}, with lookup ${dups(withLookup)}`,
    );
    expect(withLookup.sent).toBe(10);
    expect(dups(withLookup)).toBe(0);
    expect(dups(withLookup)).toBeLessThan(dups(without));
  });
});

describe('Fast2SmsCarrier (fetch → fake Fast2SMS)', () => {
  it('sends +91 numbers as ten digits on the Quick SMS route', async () => {
    const r = await fast2sms().send(sms('inc1:c1', IN, 'hello'));
    expect(r).toEqual({ ok: true, carrier: 'fast2sms', providerMessageId: f2.accepted[0]?.requestId });
    expect(f2.requests[0]).toEqual({
      route: 'q',
      message: 'hello',
      numbers: '9876543210',
      flash: 0,
      idempotencyKey: 'inc1:c1',
      authorized: true,
      status: 200,
    });
  });

  it('refuses other countries without a request, and malformed +91 numbers', async () => {
    expect(await fast2sms().send(sms('k', US))).toEqual({
      ok: false,
      carrier: 'fast2sms',
      retryable: false,
      code: 'fast2sms_unsupported_country',
    });
    expect(await fast2sms().send(sms('k', '+91123'))).toMatchObject({ retryable: false, code: 'fast2sms_invalid_number' });
    expect(f2.requests).toHaveLength(0);
  });

  it('maps refusals to permanent failures with the Fast2SMS status code', async () => {
    f2.invalidNumbers.add('9876543210');
    expect(await fast2sms().send(sms('k', IN))).toEqual({ ok: false, carrier: 'fast2sms', retryable: false, code: 'fast2sms_411' });
    const badKey = new Fast2SmsCarrier({ apiKey: 'wrong', baseUrl: f2.url });
    expect(await badKey.send(sms('k', IN))).toEqual({ ok: false, carrier: 'fast2sms', retryable: false, code: 'fast2sms_412' });
  });

  it('5xx, 429, timeouts and network errors are retryable', async () => {
    const carrier = fast2sms(300);
    f2.failNext(1, 502);
    f2.failNext(1, 429);
    expect(await carrier.send(sms('k', IN))).toEqual({ ok: false, carrier: 'fast2sms', retryable: true, code: 'http_502' });
    expect(await carrier.send(sms('k', IN))).toMatchObject({ retryable: true, code: 'http_429' });
    f2.slow(1500);
    expect(await carrier.send(sms('k', IN))).toMatchObject({ retryable: true, code: 'timeout' });
    f2.slow(0);
    f2.down(true, 'reset');
    expect(await carrier.send(sms('k', IN))).toMatchObject({ retryable: true, code: expect.stringMatching(/^net_/) });
    const refused = new Fast2SmsCarrier({ apiKey: f2.apiKey, baseUrl: `http://127.0.0.1:${await deadPort()}` });
    expect(await refused.send(sms('k', IN))).toMatchObject({ retryable: true, code: 'net_econnrefused' });
  });
});

describe('FailoverCarrier (Twilio primary, Fast2SMS secondary)', () => {
  let t = 0;
  const now = (): number => t;
  let states: CircuitState[];
  const failover = (timeoutMs = 2000): FailoverCarrier =>
    new FailoverCarrier(twilioCarrier({ timeoutMs }), fast2sms(), {
      threshold: 3,
      openMs: 30_000,
      now,
      onStateChange: (s) => states.push(s),
    });
  beforeEach(() => {
    t = 1_000_000;
    states = [];
  });

  it('Twilio down: retryable failures until the threshold, then Fast2SMS carries', async () => {
    const carrier = failover();
    tw.down(true);
    const t0 = performance.now();
    const results: AttemptResult[] = [];
    for (let i = 0; i < 3; i++) results.push(await carrier.send(sms(`inc:${i}`, IN)));
    const failoverMs = performance.now() - t0;
    console.log(`failover (503s): first send → first delivery via fast2sms in ${failoverMs.toFixed(0)} ms`);
    expect(results[0]).toMatchObject({ ok: false, carrier: 'twilio', retryable: true, code: 'http_503' });
    expect(results[1]).toMatchObject({ ok: false, carrier: 'twilio', retryable: true });
    expect(results[2]).toMatchObject({ ok: true, carrier: 'fast2sms' });
    expect(carrier.state).toBe('open');
    expect(states).toEqual(['open']);
    // while open, Twilio is not tried at all
    expect(await carrier.send(sms('inc:3', IN))).toMatchObject({ ok: true, carrier: 'fast2sms' });
    expect(tw.requests).toHaveLength(3);
    expect(f2.accepted.map((m) => m.idempotencyKey)).toEqual(['inc:2', 'inc:3']);
  });

  it('Twilio hanging: time to fail over is bounded by threshold × timeoutMs', async () => {
    const carrier = failover(250);
    tw.failRatio(1, ['timeout']);
    const t0 = performance.now();
    let r: AttemptResult | undefined;
    for (let i = 0; i < 3; i++) r = await carrier.send(sms(`inc:${i}`, IN));
    console.log(`failover (timeouts of 250 ms): first send → first delivery via fast2sms in ${(performance.now() - t0).toFixed(0)} ms`);
    expect(r).toMatchObject({ ok: true, carrier: 'fast2sms' });
  });

  it('half-open: after openMs one trial goes to Twilio; success closes the circuit', async () => {
    const carrier = failover();
    tw.down(true);
    for (let i = 0; i < 3; i++) await carrier.send(sms(`a:${i}`, IN));
    expect(carrier.state).toBe('open');
    t += 29_999;
    expect(await carrier.send(sms('b', IN))).toMatchObject({ ok: true, carrier: 'fast2sms' });
    tw.down(false);
    t += 1;
    expect(carrier.state).toBe('half_open');
    expect(await carrier.send(sms('c', IN))).toMatchObject({ ok: true, carrier: 'twilio' });
    expect(carrier.state).toBe('closed');
    expect(await carrier.send(sms('d', IN))).toMatchObject({ ok: true, carrier: 'twilio' });
    expect(states).toEqual(['open', 'half_open', 'closed']);
  });

  it('half-open: a failed trial reopens the circuit and that send goes to Fast2SMS', async () => {
    const carrier = failover();
    tw.down(true);
    for (let i = 0; i < 3; i++) await carrier.send(sms(`a:${i}`, IN));
    t += 30_000;
    const before = tw.requests.length;
    expect(await carrier.send(sms('trial', IN))).toMatchObject({ ok: true, carrier: 'fast2sms' });
    expect(tw.requests.length).toBe(before + 1);
    expect(carrier.state).toBe('open');
    t += 1_000;
    expect(await carrier.send(sms('next', IN))).toMatchObject({ ok: true, carrier: 'fast2sms' });
    expect(tw.requests.length).toBe(before + 1);
    expect(states).toEqual(['open', 'half_open', 'open']);
  });

  it('half-open: only one trial at a time; concurrent sends keep using Fast2SMS', async () => {
    const carrier = failover();
    tw.down(true);
    for (let i = 0; i < 3; i++) await carrier.send(sms(`a:${i}`, IN));
    tw.down(false);
    tw.slow(100);
    t += 30_000;
    const before = tw.requests.length;
    const [trial, other] = await Promise.all([carrier.send(sms('t', IN)), carrier.send(sms('o', IN))]);
    expect(trial).toMatchObject({ ok: true, carrier: 'twilio' });
    expect(other).toMatchObject({ ok: true, carrier: 'fast2sms' });
    expect(tw.requests.length).toBe(before + 1);
  });

  it('a permanent Twilio failure is returned as is and does not fail over or count', async () => {
    const carrier = failover();
    tw.invalidNumbers.add(IN);
    tw.failNext(2, 500);
    await carrier.send(sms('x', IN));
    await carrier.send(sms('y', IN));
    expect(await carrier.send(sms('z', IN))).toEqual({ ok: false, carrier: 'twilio', retryable: false, code: 'twilio_21211' });
    expect(f2.requests).toHaveLength(0);
    tw.failNext(2, 500);
    await carrier.send(sms('p', IN));
    await carrier.send(sms('q', IN));
    expect(carrier.state).toBe('closed'); // the permanent answer reset the count
  });

  it('at-least-once across carriers: a Twilio timeout that opens the circuit goes to Fast2SMS although Twilio may have sent it', async () => {
    const carrier = new FailoverCarrier(twilioCarrier({ timeoutMs: 250 }), fast2sms(), { threshold: 1, now });
    tw.slow(800); // Twilio accepts, the answer comes too late
    expect(await carrier.send(sms('inc:1', IN))).toMatchObject({ ok: true, carrier: 'fast2sms' });
    // the contact gets the text from both carriers: Fast2SMS cannot look up what Twilio holds
    expect(tw.acceptedFor(IN)).toHaveLength(1);
    expect(f2.accepted).toHaveLength(1);
  });

  it('while open, a number Fast2SMS cannot serve stays retryable (waits for Twilio)', async () => {
    const carrier = failover();
    tw.down(true);
    for (let i = 0; i < 3; i++) await carrier.send(sms(`a:${i}`, IN));
    expect(await carrier.send(sms('us', US))).toEqual({
      ok: false,
      carrier: 'fast2sms',
      retryable: true,
      code: 'fast2sms_unsupported_country',
    });
  });
});
