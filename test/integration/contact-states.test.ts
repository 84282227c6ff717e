/**
 * Contact states end to end (issue 37): a real in-process Vigil, the real Twilio client against
 * the fake Twilio. A number the carrier says refused our texts (21610) becomes `opted_out`: the
 * person is told, and the next SOS holds that contact's text back (recorded, never sent) while the
 * others get theirs. An invalid number (21211) is reported to the person and keeps its state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeTwilio } from '../helpers/fake-twilio.js';
import { eventually, startTestVigil, type TestVigil } from '../helpers/vigil.js';
import { dispatchRound, expireAndSweep, incidentOf, twilioEnv } from './sms-support.js';

let tw: FakeTwilio;
let v: TestVigil;

beforeAll(async () => {
  tw = await FakeTwilio.start();
  v = await startTestVigil(twilioEnv(tw), { manualTicks: true });
});
afterAll(async () => {
  await v?.stop();
  await tw?.close();
});

const OK = '+14155550401';
const STOPPED = '+14155550402';
const INVALID = '+14155550403';

type ContactView = { name: string; phone: string; state: string };
type Inbox = { notifications: { kind: string; title: string; body: string; incidentId?: string }[] };

async function sos(token: string): Promise<{ timerId: string }> {
  const t = await v.api(token, 'POST', '/v1/timers', { durationSeconds: 1 });
  expect(t.status).toBe(201);
  await expireAndSweep(v, Date.parse(t.body.timer.expiresAt as string));
  await dispatchRound(v);
  await v.vigil.dispatcher.drain();
  return { timerId: t.body.timer.id as string };
}

describe('contact states', () => {
  it('new contacts are pending; GET shows each state; saving the list again keeps them', async () => {
    const token = v.token('sam', { name: 'Sam' });
    const contacts = [
      { name: 'Olga', phone: OK },
      { name: 'Stan', phone: STOPPED },
      { name: 'Ivy', phone: INVALID },
    ];
    const put = await v.api(token, 'PUT', '/v1/me/contacts', { contacts });
    expect(put.status).toBe(200);
    expect((put.body.contacts as ContactView[]).map((c) => c.state)).toEqual(['pending', 'pending', 'pending']);
  });

  it('a 21610 (STOP) makes the contact opted_out and tells the person; a 21211 tells the person, state kept', async () => {
    tw.unsubscribedNumbers.add(STOPPED);
    tw.invalidNumbers.add(INVALID);
    const token = v.token('sam', { name: 'Sam' });
    const first = await sos(token);
    const inc = await incidentOf(v, first.timerId);
    const status = new Map(inc.deliveries.map((d) => [d.phone, [d.status, d.lastError]]));
    expect(status.get(OK)).toEqual(['sent', undefined]);
    expect(status.get(STOPPED)).toEqual(['failed', 'twilio_21610']);
    expect(status.get(INVALID)).toEqual(['failed', 'twilio_21211']);

    const got = await v.api(token, 'GET', '/v1/me/contacts');
    expect((got.body.contacts as ContactView[]).map((c) => [c.name, c.state])).toEqual([
      ['Olga', 'pending'],
      ['Stan', 'opted_out'],
      ['Ivy', 'pending'],
    ]);
    const inbox = await eventually(async () => {
      const r = (await v.api(token, 'GET', '/v1/me/notifications')).body as Inbox;
      const found = r.notifications.filter((n) => n.kind === 'contact_unreachable');
      return found.length === 2 ? found : undefined;
    }, 'two contact_unreachable entries');
    expect(inbox.map((n) => n.title).sort()).toEqual(['Ivy cannot be texted', 'Stan does not take Vigil texts']);
    expect(inbox.every((n) => n.incidentId === inc.id)).toBe(true);
    // no number in the person's inbox either: names only
    expect(JSON.stringify(inbox)).not.toMatch(/\+1415/u);

    // saving the list again (renamed) keeps the state
    await v.api(token, 'PUT', '/v1/me/contacts', {
      contacts: [
        { name: 'Olga', phone: OK },
        { name: 'Stan S.', phone: STOPPED },
        { name: 'Ivy', phone: INVALID },
      ],
    });
    expect(((await v.api(token, 'GET', '/v1/me/contacts')).body.contacts as ContactView[])[1]).toMatchObject({ state: 'opted_out' });
    await v.api(token, 'POST', `/v1/timers/${first.timerId}/safe`);
    await dispatchRound(v);
  });

  it('the next SOS: no text to the opted-out contact (held, with the reason), the others texted', async () => {
    const token = v.token('sam', { name: 'Sam' });
    const before = tw.requests.filter((r) => r.to === STOPPED).length;
    const second = await sos(token);
    const inc = await incidentOf(v, second.timerId);
    const byPhone = new Map(inc.deliveries.map((d) => [d.phone, d]));
    expect(byPhone.get(STOPPED)).toMatchObject({ kind: 'sos', status: 'superseded', attempts: 0, lastError: 'held_contact_opted_out' });
    expect(byPhone.get(OK)).toMatchObject({ status: 'sent' });
    // nothing was asked of the carrier for that number
    expect(tw.requests.filter((r) => r.to === STOPPED)).toHaveLength(before);
    // and no all-clear goes to it after I'm safe
    await v.api(token, 'POST', `/v1/timers/${second.timerId}/safe`);
    await dispatchRound(v);
    const after = await incidentOf(v, second.timerId);
    expect(after.deliveries.filter((d) => d.kind === 'all_clear').map((d) => d.phone)).not.toContain(STOPPED);
  });
});
