/**
 * Replies from contacts end to end (issue 37, item 2): a real in-process Vigil with the real
 * Twilio client against the fake Twilio; replies are posted over HTTP to the incoming-message
 * webhook, signed the way Twilio signs them (twilio.getExpectedTwilioSignature over the public URL).
 */
import twilio from 'twilio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeTwilio } from '../helpers/fake-twilio.js';
import { openSockets } from '../helpers/sockets.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { dispatchRound, expireAndSweep, incidentOf, twilioEnv } from './sms-support.js';

const PUBLIC_URL = 'https://vigil.example.org/v1/replies/twilio';
const ANA = '+14155550501';
const BEN = '+14155550502';
const CAL = '+14155550503';
const STRANGER = '+14155550599';

let tw: FakeTwilio;
let v: TestVigil;
const sockets = openSockets();

beforeAll(async () => {
  tw = await FakeTwilio.start();
  v = await startTestVigil({ ...twilioEnv(tw), TWILIO_INBOUND_URL: PUBLIC_URL }, { manualTicks: true });
});
afterAll(async () => {
  sockets.closeAll();
  await v?.stop();
  await tw?.close();
});

let sidN = 0;
const form = (from: string, body: string, sid = `SM${String(++sidN).padStart(32, '0')}`): Record<string, string> => ({
  AccountSid: tw.accountSid,
  ApiVersion: '2010-04-01',
  From: from,
  To: '+15005550006',
  Body: body,
  MessageSid: sid,
  SmsSid: sid,
  NumMedia: '0',
});
const sign = (p: Record<string, string>, token = tw.authToken, url = PUBLIC_URL) => twilio.getExpectedTwilioSignature(token, url, p);

async function post(p: Record<string, string>, signature?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (signature !== undefined) headers['x-twilio-signature'] = signature;
  const res = await fetch(`${v.url}/v1/replies/twilio`, { method: 'POST', headers, body: new URLSearchParams(p).toString() });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}
const reply = (p: Record<string, string>) => post(p, sign(p));

type ContactView = { name: string; phone: string; state: string };
type Inbox = { notifications: { kind: string; title: string; body: string; incidentId?: string }[] };
type Ack = { contactId: string; name: string; at: string };

async function states(token: string) {
  const r = await v.api(token, 'GET', '/v1/me/contacts');
  return new Map((r.body.contacts as ContactView[]).map((c) => [c.name, c.state]));
}

async function sos(token: string): Promise<{ timerId: string }> {
  const t = await v.api(token, 'POST', '/v1/timers', { durationSeconds: 1 });
  expect(t.status).toBe(201);
  await expireAndSweep(v, Date.parse(t.body.timer.expiresAt as string));
  await dispatchRound(v);
  await v.vigil.dispatcher.drain();
  return { timerId: t.body.timer.id as string };
}

describe('replies from contacts', () => {
  const token = () => v.token('rosa', { name: 'Rosa' });

  beforeAll(async () => {
    const put = await v.api(token(), 'PUT', '/v1/me/contacts', {
      contacts: [
        { name: 'Ana', phone: ANA },
        { name: 'Ben', phone: BEN },
        { name: 'Cal', phone: CAL },
      ],
    });
    expect(put.status).toBe(200);
  });

  it('a bad or missing signature is refused with 403 bad_signature, as receipts are, and changes nothing', async () => {
    const p = form(ANA, 'YES');
    const refusals = [
      await post(p),
      await post(p, 'not-a-signature'),
      await post(p, sign(p, 'another-auth-token')),
      await post(p, sign(p, tw.authToken, `${v.url}/v1/replies/twilio`)), // the URL this process sees, not the public one
      await post({ ...p, Body: 'STOP' }, sign(p)), // tampered
    ];
    for (const r of refusals) {
      expect(r.status).toBe(403);
      expect(JSON.parse(r.text)).toMatchObject({ error: { code: 'bad_signature' } });
    }
    expect((await states(token())).get('Ana')).toBe('pending');
  });

  it('YES with no open incident confirms the contact; answered with TwiML', async () => {
    const r = await reply(form(ANA, '  yes '));
    expect(r.status).toBe(200);
    expect(r.type).toContain('text/xml');
    expect(r.text).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?><Response><Message>Thank you\. You are now an emergency contact/u);
    expect((await states(token())).get('Ana')).toBe('confirmed');
  });

  it('unknown senders, HELP and other words get a short fixed answer; the body is never echoed', async () => {
    const probe = '<script>alert(1)</script> call +19998887777';
    for (const [from, body] of [
      [STRANGER, probe],
      [BEN, probe],
      [BEN, 'help'],
    ] as const) {
      const r = await reply(form(from, body));
      expect(r.status).toBe(200);
      expect(r.type).toContain('text/xml');
      expect(r.text).toContain('<Response>');
      expect(r.text).not.toContain('script');
      expect(r.text).not.toContain('9998887777');
    }
    // a well-signed form without a sender or message id is still TwiML, not an error page
    const bare = { AccountSid: tw.accountSid };
    const r = await reply(bare);
    expect(r.status).toBe(200);
    expect(r.type).toContain('text/xml');
  });

  it('STOP opts the contact out (inbox entry), and the next SOS holds their text; START makes them pending again', async () => {
    const r = await reply(form(CAL, 'Stop'));
    expect(r.status).toBe(200);
    expect(r.text).toBe('<?xml version="1.0" encoding="UTF-8"?><Response/>');
    expect((await states(token())).get('Cal')).toBe('opted_out');
    const inbox = await eventually(async () => {
      const b = (await v.api(token(), 'GET', '/v1/me/notifications')).body as Inbox;
      return b.notifications.find((n) => n.kind === 'contact_opted_out');
    }, 'a contact_opted_out entry');
    expect(inbox.title).toBe('Cal stopped Vigil texts');

    const before = tw.requests.filter((q) => q.to === CAL).length;
    const s = await sos(token());
    const inc = await incidentOf(v, s.timerId);
    const byPhone = new Map(inc.deliveries.map((d) => [d.phone, d]));
    expect(byPhone.get(CAL)).toMatchObject({ status: 'superseded', attempts: 0, lastError: 'held_contact_opted_out' });
    expect(byPhone.get(ANA)).toMatchObject({ status: 'sent' });
    expect(tw.requests.filter((q) => q.to === CAL)).toHaveLength(before);

    await reply(form(CAL, 'START'));
    expect((await states(token())).get('Cal')).toBe('pending');
    await v.api(token(), 'POST', `/v1/timers/${s.timerId}/safe`);
    await dispatchRound(v);
  });

  it("YES during an open incident: moderators' socket gets incident.updated with the acknowledgement; the person's inbox too; a repeat counts once", async () => {
    const admin = await sockets.connect(v.url, v.token('mod', { admin: true }));
    const s = await sos(token());
    const inc = await incidentOf(v, s.timerId);

    const p = form(ANA, 'OK');
    const first = await reply(p);
    expect(first.text).toContain('Thank you. Vigil has told the moderators you are on it.');
    const again = await reply(p); // Twilio repeating the same webhook
    expect(again.status).toBe(200);
    const second = await reply(form(ANA, '1')); // another YES from the same contact
    expect(second.text).toContain('already recorded');

    const ev = await eventually(async () => {
      const found = admin
        .named('incident.updated')
        .map((e) => e.incident as { id: string; contactAcks?: Ack[] })
        .find((i) => i.id === inc.id && (i.contactAcks?.length ?? 0) > 0);
      return Promise.resolve(found);
    }, "the moderators' incident.updated with the acknowledgement");
    expect(ev.contactAcks!.map((a) => a.name)).toEqual(['Ana']);

    const shown = (await incidentOf(v, s.timerId)) as unknown as { contactAcks: Ack[]; status: string; acknowledgedBy?: string };
    expect(shown.contactAcks).toHaveLength(1);
    expect(shown.contactAcks[0]).toMatchObject({ name: 'Ana' });
    // the moderator's acknowledgement is a different thing: untouched
    expect(shown.status).toBe('active');
    expect(shown.acknowledgedBy).toBeUndefined();

    const acks = await eventually(async () => {
      const b = (await v.api(token(), 'GET', '/v1/me/notifications')).body as Inbox;
      const found = b.notifications.filter((n) => n.kind === 'contact_acknowledged');
      return found.length > 0 ? found : undefined;
    }, 'a contact_acknowledged entry');
    expect(acks).toHaveLength(1);
    expect(acks[0]).toMatchObject({ title: 'Ana is on it', incidentId: inc.id });
    expect(
      admin
        .named('incident.updated')
        .filter((e) => (e.incident as { id: string }).id === inc.id && (e.incident as { contactAcks?: Ack[] }).contactAcks),
    ).toHaveLength(1);

    await v.api(token(), 'POST', `/v1/timers/${s.timerId}/safe`);
    await dispatchRound(v);
  });

  it("YES on a duress incident reaches moderators only: no inbox entry, nothing on the person's sockets", async () => {
    const DEE = '+14155550504';
    const tok = v.token('dora', { name: 'Dora' });
    expect((await v.api(tok, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Dee', phone: DEE }] })).status).toBe(200);
    expect((await v.api(tok, 'PUT', '/v1/me/duress', { pin: '4711' })).status).toBe(200);
    const admin = await sockets.connect(v.url, v.token('mod2', { admin: true }));
    const own = await sockets.connect(v.url, tok);
    const t = await v.api(tok, 'POST', '/v1/timers', { durationSeconds: 600 });
    expect(t.status).toBe(201);
    expect((await v.api(tok, 'POST', `/v1/timers/${t.body.timer.id as string}/safe`, { pin: '4711' })).status).toBe(200);
    const open = await eventually(() => v.vigil.store.openIncidentOf('dora'), 'the duress incident');
    expect(open.sources).toContain('duress');

    const r = await reply(form(DEE, 'yes'));
    expect(r.text).toContain('Vigil has told the moderators you are on it');
    await eventually(
      () =>
        Promise.resolve(
          admin.named('incident.updated').find((e) => (e.incident as { id: string; contactAcks?: Ack[] }).contactAcks !== undefined),
        ),
      "the moderators' incident.updated",
    );
    expect((await v.vigil.store.getIncident(open.id))?.contactAcks?.map((a) => a.name)).toEqual(['Dee']);
    const inbox = (await v.api(tok, 'GET', '/v1/me/notifications')).body as Inbox;
    expect(inbox.notifications.filter((n) => n.kind === 'contact_acknowledged')).toEqual([]);
    expect(own.named('incident.updated')).toEqual([]);
    expect(own.named('notification.created').filter((n) => JSON.stringify(n).includes('contact_acknowledged'))).toEqual([]);
    expect((await v.api(v.token('mod2', { admin: true }), 'POST', `/v1/admin/incidents/${open.id}/resolve`)).status).toBe(200);
  });

  it('a confirmed contact who replies STOP then START is confirmed again', async () => {
    expect((await states(token())).get('Ana')).toBe('confirmed');
    await reply(form(ANA, 'STOP'));
    expect((await states(token())).get('Ana')).toBe('opted_out');
    const r = await reply(form(ANA, 'unstop'));
    expect(r.text).toContain('You will get Vigil emergency texts again');
    expect((await states(token())).get('Ana')).toBe('confirmed');
  });
});
