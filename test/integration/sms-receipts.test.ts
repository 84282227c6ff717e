/**
 * Twilio status callbacks. A real Vigil (TWILIO_* env → the real Twilio client → the fake)
 * sends the SOS; the receipts router is mounted the way main.ts mounts it — as an `extra`
 * router of createApp, ahead of the JSON parser and bearer auth — on the same store, and
 * receipts are posted to it signed the way Twilio signs them.
 */
import { contactIdKey } from '../../src/domain/contact.js';
import { createServer, type Server } from 'node:http';
import express from 'express';
import type { AddressInfo } from 'node:net';
import twilio from 'twilio';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { IncidentService } from '../../src/app/incidents.js';
import { SmsBudget } from '../../src/app/sms-budget.js';
import { TimerService } from '../../src/app/timers.js';
import { makeLimits } from '../../src/domain/limits.js';
import { createApp } from '../../src/http/app.js';
import { receiptRoutes } from '../../src/http/routes/receipts.js';
import type { EventPublisher, VigilEvent } from '../../src/realtime/events.js';
import { FakeTwilio } from '../helpers/fake-twilio.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { armWithContacts, dispatchRound, expireAndSweep, incidentOf, twilioEnv, type DeliveryView } from './sms-support.js';

/** what Twilio is told; the receipts app itself listens on a loopback port (a proxy in between) */
const PUBLIC_URL = 'https://vigil.example.org/v1/receipts/twilio';

let tw: FakeTwilio;
let v: TestVigil;
let server: Server;
let receiptsUrl: string;
const events: VigilEvent[] = [];
let first: DeliveryView;
let second: DeliveryView;

beforeAll(async () => {
  tw = await FakeTwilio.start();
  v = await startTestVigil({ ...twilioEnv(tw), TWILIO_STATUS_CALLBACK_URL: PUBLIC_URL }, { manualTicks: true });
  const { store, metrics, log, config } = v.vigil;
  const publisher: EventPublisher = { publish: (e) => events.push(e) };
  const app = createApp({
    store,
    contactIds: contactIdKey(config.contactIds.key),
    timers: new TimerService(store, publisher, makeLimits(config.limits), metrics, new SmsBudget(store, config.sms)),
    incidents: new IncidentService(store, publisher, metrics),
    metrics,
    log,
    jwtSecret: config.jwtSecret,
    bodyLimit: config.bodyLimit,
    draining: () => false,
    extra: [
      {
        path: '/v1/receipts',
        router: receiptRoutes({ store, events: publisher, authToken: tw.authToken, publicUrl: PUBLIC_URL, log, metrics }),
      },
    ],
  });
  server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  receiptsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/receipts/twilio`;

  const a = await armWithContacts(v, 'rita', ['+14155550301', '+14155550302'], { durationSeconds: 1 }, 'Rita');
  await expireAndSweep(v, a.expiresAt);
  await dispatchRound(v);
  const inc = await incidentOf(v, a.timerId);
  [first, second] = inc.deliveries as [DeliveryView, DeliveryView];
});
afterAll(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  await v?.stop();
  await tw?.close();
});
beforeEach(() => {
  events.length = 0;
});

const sidOf = (d: DeliveryView) => tw.accepted.find((m) => m.to === d.phone)!.sid;

/** the form Twilio posts for a status change */
const form = (d: DeliveryView, status: string, extra: Record<string, string> = {}): Record<string, string> => {
  const sid = sidOf(d);
  return {
    AccountSid: tw.accountSid,
    ApiVersion: '2010-04-01',
    From: '+15005550006',
    MessageSid: sid,
    MessageStatus: status,
    SmsSid: sid,
    SmsStatus: status,
    To: d.phone,
    ...extra,
  };
};

async function post(params: Record<string, string>, signature?: string, contentType = 'application/x-www-form-urlencoded') {
  const headers: Record<string, string> = { 'content-type': contentType };
  if (signature !== undefined) headers['x-twilio-signature'] = signature;
  const body = contentType.includes('json') ? JSON.stringify(params) : new URLSearchParams(params).toString();
  const res = await fetch(receiptsUrl, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as { result?: string; error?: { code: string } } };
}

const sign = (params: Record<string, string>, token = tw.authToken, url = PUBLIC_URL) =>
  twilio.getExpectedTwilioSignature(token, url, params);
const signed = (params: Record<string, string>) => post(params, sign(params));
const statusOf = async (d: DeliveryView) => (await v.vigil.store.getDelivery(d.key))?.status;

describe('Twilio delivery receipts', () => {
  it('the SOS asked Twilio to call back the public URL', () => {
    expect(first.status).toBe('sent');
    expect(second.status).toBe('sent');
    expect(tw.requests.map((r) => r.statusCallback)).toEqual([PUBLIC_URL, PUBLIC_URL]);
  });

  it('bad signatures are refused with 403 and change nothing', async () => {
    const p = form(first, 'delivered');
    const refusals = [
      await post(p), // no signature
      await post(p, 'not-a-signature'),
      await post(p, sign(p, 'another-auth-token')), // signed with someone else's token
      await post(p, sign(p, tw.authToken, receiptsUrl)), // signed for the URL as this process sees it, not the public one
      await post({ ...p, MessageStatus: 'failed' }, sign(p)), // a signed body that was tampered with
      await post(p, sign(p), 'application/json'), // not the form Twilio signs
    ];
    for (const r of refusals) {
      expect(r.status).toBe(403);
      expect(r.body.error?.code).toBe('bad_signature');
    }
    expect(await statusOf(first)).toBe('sent');
    expect(events).toHaveLength(0);
  });

  it('a good `delivered` receipt moves sent → delivered and tells moderators (no bearer token needed)', async () => {
    const r = await signed(form(first, 'delivered'));
    expect(r).toEqual({ status: 200, body: { result: 'applied' } });
    expect(await statusOf(first)).toBe('delivered');
    expect(events.map((e) => [e.name, e.toAdmins, (e.payload.delivery as { status: string }).status])).toEqual([
      ['delivery.updated', true, 'delivered'],
    ]);
    expect(JSON.stringify(events)).not.toContain('5550301');
    const inc = await incidentOf(v, (await v.vigil.store.getIncident(first.incidentId))!.timerId);
    expect(inc.deliveries.find((d) => d.key === first.key)?.status).toBe('delivered');
  });

  it('a late `sent` after `delivered` does not move it back; a duplicate is ignored; both answer 200', async () => {
    expect(await signed(form(first, 'sent'))).toEqual({ status: 200, body: { result: 'stale' } });
    expect(await signed(form(first, 'delivered'))).toEqual({ status: 200, body: { result: 'stale' } });
    expect(await statusOf(first)).toBe('delivered');
    expect(events).toHaveLength(0);
  });

  it('intermediate statuses are acknowledged and ignored', async () => {
    for (const s of ['queued', 'accepted', 'sending', 'constructor'])
      expect(await signed(form(second, s))).toEqual({ status: 200, body: { result: 'ignored' } });
    expect(await statusOf(second)).toBe('sent');
  });

  it('`undelivered` moves sent → failed; a later `delivered` or `sent` does not revive it', async () => {
    expect(await signed(form(second, 'undelivered', { ErrorCode: '30003' }))).toEqual({ status: 200, body: { result: 'applied' } });
    expect(await statusOf(second)).toBe('failed');
    expect(await signed(form(second, 'sent'))).toEqual({ status: 200, body: { result: 'stale' } });
    expect(await statusOf(second)).toBe('failed');
    expect(events.map((e) => (e.payload.delivery as { status: string }).status)).toEqual(['failed']);
  });

  it('a receipt for a message we never sent is acknowledged and changes nothing; a signed form without MessageSid is 400', async () => {
    const p = { ...form(first, 'delivered'), MessageSid: 'SM00000000000000000000000000000000' };
    // kept in case an attempt records that message later (below); it moves no delivery
    expect(await signed(p)).toEqual({ status: 200, body: { result: 'kept' } });
    expect(await statusOf(first)).toBe('delivered');
    expect(events).toHaveLength(0);
    const { MessageSid: _drop, ...noSid } = form(first, 'delivered');
    expect((await signed(noSid)).status).toBe(400);
  });

  it('receipts are counted by status and result', async () => {
    const text = await v.vigil.metrics.registry.metrics();
    expect(text).toMatch(/vigil_sms_receipts_total\{[^}]*status="delivered",result="applied"[^}]*\} 1/);
    expect(text).toMatch(/vigil_sms_receipts_total\{[^}]*status="delivered",result="bad_signature"[^}]*\} 4/);
    expect(text).toMatch(/vigil_sms_receipts_total\{[^}]*status="other",result="bad_signature"[^}]*\} 1/); // the JSON one: no form, no status
    expect(text).toMatch(/vigil_sms_receipts_total\{[^}]*status="failed",result="bad_signature"[^}]*\} 1/);
    expect(text).toMatch(/vigil_sms_receipts_total\{[^}]*status="undelivered",result="applied"[^}]*\} 1/);
  });

  it('without TWILIO_AUTH_TOKEN / TWILIO_STATUS_CALLBACK_URL the route exists and refuses everything', async () => {
    const app = express().use(
      '/v1/receipts',
      receiptRoutes({
        store: v.vigil.store,
        events: { publish: (e) => events.push(e) },
        authToken: undefined,
        publicUrl: undefined,
        log: v.vigil.log,
      }),
    );
    const s = createServer(app);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    try {
      const p = form(second, 'delivered');
      const res = await fetch(`http://127.0.0.1:${(s.address() as AddressInfo).port}/v1/receipts/twilio`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': sign(p) },
        body: new URLSearchParams(p).toString(),
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('bad_signature');
      expect(events).toHaveLength(0);
    } finally {
      await new Promise<void>((r) => s.close(() => r()));
    }
  });
});

describe('Twilio delivery receipts and the attempt they are about', () => {
  /** the form Twilio posts about message `sid` to `to` */
  const about = (sid: string, to: string, status: string): Record<string, string> => ({
    AccountSid: tw.accountSid,
    ApiVersion: '2010-04-01',
    From: '+15005550006',
    MessageSid: sid,
    MessageStatus: status,
    SmsSid: sid,
    SmsStatus: status,
    To: to,
  });
  const messagesTo = (phone: string) => tw.accepted.filter((m) => m.to === phone);

  /** a dispatch round whose Twilio answers come `ms` late: it runs on while the caller posts receipts */
  function slowRound(ms: number): Promise<void> {
    tw.slow(ms);
    return v.vigil.dispatcher
      .tick()
      .then(() => v.vigil.dispatcher.drain())
      .finally(() => tw.slow(0));
  }

  it('a receipt that arrives before its message’s outcome is recorded is kept, then applied with the outcome', async () => {
    const phone = '+14155550311';
    const a = await armWithContacts(v, 'sam', [phone], { durationSeconds: 1 }, 'Sam');
    await expireAndSweep(v, a.expiresAt);
    const round = slowRound(500);
    // Twilio took the message and reports it delivered; its answer to our create has not come back yet
    const [msg] = await eventually(async () => (messagesTo(phone).length > 0 ? messagesTo(phone) : undefined), 'the SOS accepted');
    const [d] = (await incidentOf(v, a.timerId)).deliveries as [DeliveryView];
    expect(d.status).toBe('sending');
    expect(await signed(about(msg!.sid, phone, 'delivered'))).toEqual({ status: 200, body: { result: 'kept' } });
    await round;
    expect(await v.vigil.store.getDelivery(d.key)).toMatchObject({ status: 'delivered', providerMessageId: msg!.sid });
    expect(await signed(about(msg!.sid, phone, 'delivered'))).toEqual({ status: 200, body: { result: 'stale' } });
    // delivered already when its outcome was written: still an SOS text sent, so the person is told
    const inbox = (await v.api(a.token, 'GET', '/v1/me/notifications')).body.notifications as { kind: string }[];
    expect(inbox).toMatchObject([{ kind: 'contacts_texted', incidentId: d.incidentId }]);
  });

  it('after a moderator’s resend, a late receipt for the first message does not move the resent text; its own receipt does', async () => {
    const phone = '+14155550312';
    const admin = v.token('moderator', { admin: true });
    const a = await armWithContacts(v, 'tess', [phone], { durationSeconds: 1 }, 'Tess');
    await expireAndSweep(v, a.expiresAt);
    await dispatchRound(v);
    const [d] = (await incidentOf(v, a.timerId)).deliveries as [DeliveryView];
    const [first] = messagesTo(phone);
    expect(await signed(about(first!.sid, phone, 'undelivered'))).toEqual({ status: 200, body: { result: 'applied' } });
    expect(await statusOf(d)).toBe('failed');

    const resent = await v.api(admin, 'POST', `/v1/admin/deliveries/${encodeURIComponent(d.key)}/resend`);
    expect(resent.body.delivery).toMatchObject({ status: 'pending', resends: 1 });
    const round = slowRound(500);
    await eventually(async () => messagesTo(phone).length === 2, 'the resent SOS accepted');
    expect(await statusOf(d)).toBe('sending');
    // Twilio's late word on the first message, while the resend is with the carrier
    const late = await signed(about(first!.sid, phone, 'delivered'));
    expect(late.status).toBe(200);
    expect(late.body.result).not.toBe('applied');
    await round;
    const second = messagesTo(phone)[1]!;
    expect(await v.vigil.store.getDelivery(d.key)).toMatchObject({
      status: 'sent',
      attempts: 1,
      providerMessageId: second.sid,
      earlierMessageIds: [first!.sid],
    });
    expect(await signed(about(second.sid, phone, 'delivered'))).toEqual({ status: 200, body: { result: 'applied' } });
    expect(await statusOf(d)).toBe('delivered');
  });
});
