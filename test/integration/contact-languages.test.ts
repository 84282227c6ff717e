/**
 * Texts in each contact's language, with the time in the person's zone and the incident's
 * reference, end to end: a real in-process Vigil, the real Twilio client against the fake Twilio.
 * And the refusals of bad values (nothing saved).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { incidentReference } from '../../src/domain/locale.js';
import { textTime } from '../../src/texts/render.js';
import { FakeTwilio } from '../helpers/fake-twilio.js';
import { startTestVigil, type TestVigil } from '../helpers/vigil.js';
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

const EN = '+14155550301';
const ES = '+34600000302';
const DEFAULT = '+34600000303';

describe('texts in the contact’s language and the person’s time zone', () => {
  it('PUT /v1/me/contacts keeps each language and the defaults; GET shows them', async () => {
    const token = v.token('lucia', { name: 'Lucía' });
    const body = {
      contacts: [
        { name: 'Tom', phone: EN, language: 'en' },
        { name: 'Carmen', phone: ES, language: 'es' },
        { name: 'Pablo', phone: DEFAULT },
      ],
      language: 'es',
      timeZone: 'Europe/Madrid',
    };
    const put = await v.api(token, 'PUT', '/v1/me/contacts', body);
    expect(put.status).toBe(200);
    const got = await v.api(token, 'GET', '/v1/me/contacts');
    expect(got.body).toMatchObject({ language: 'es', timeZone: 'Europe/Madrid' });
    expect(got.body.contacts.map((c: { language?: string }) => c.language)).toEqual(['en', 'es', undefined]);
  });

  it('the SOS goes to each contact in their language (the default for one without), time in Madrid, with the reference moderators see', async () => {
    const token = v.token('lucia', { name: 'Lucía' });
    const t = await v.api(token, 'POST', '/v1/timers', { durationSeconds: 1, locationName: 'Café Central' });
    expect(t.status).toBe(201);
    const expiresAt = new Date(t.body.timer.expiresAt as string);
    await expireAndSweep(v, expiresAt.getTime());
    expect(await dispatchRound(v)).toBe(3);
    const inc = await incidentOf(v, t.body.timer.id as string);
    const ref = (inc as unknown as { reference: string }).reference;
    expect(ref).toBe(incidentReference(inc.id));
    const bodyTo = (phone: string) => tw.accepted.find((m) => m.to === phone)?.body ?? '';
    expect(bodyTo(EN)).toContain(`SOS from Vigil: Lucía did not check in at Café Central`);
    expect(bodyTo(EN)).toContain(textTime(expiresAt, 'en', 'Europe/Madrid'));
    expect(bodyTo(ES)).toContain('SOS de Vigil: Lucía no ha confirmado que esta bien en Café Central');
    expect(bodyTo(ES)).toContain(textTime(expiresAt, 'es', 'Europe/Madrid'));
    expect(bodyTo(DEFAULT)).toBe(bodyTo(ES));
    for (const phone of [EN, ES, DEFAULT]) expect(bodyTo(phone)).toContain(`Ref ${ref}`);

    // "I'm safe": the all-clear in the same languages, with the same reference
    const safe = await v.api(token, 'POST', `/v1/timers/${t.body.timer.id as string}/safe`);
    expect(safe.status).toBe(200);
    expect(await dispatchRound(v)).toBe(3);
    const last = (phone: string) => tw.accepted.filter((m) => m.to === phone).at(-1)?.body ?? '';
    expect(last(EN)).toBe(`Vigil update: Lucía has checked in and says they are safe. Please disregard the earlier SOS alert. Ref ${ref}`);
    expect(last(ES)).toBe(`Vigil: Lucía ha confirmado que esta bien. Puede ignorar la alerta SOS anterior. Ref ${ref}`);
  });
});

describe('the zone the timer was armed in', () => {
  it('wins over the contact list’s zone in the SOS text; the timer shows it', async () => {
    const token = v.token('lucia', { name: 'Lucía' });
    const t = await v.api(token, 'POST', '/v1/timers', { durationSeconds: 1, timeZone: 'Asia/Kolkata' });
    expect(t.status).toBe(201);
    expect(t.body.timer.timeZone).toBe('Asia/Kolkata');
    const expiresAt = new Date(t.body.timer.expiresAt as string);
    await expireAndSweep(v, expiresAt.getTime());
    await dispatchRound(v);
    const inc = await incidentOf(v, t.body.timer.id as string);
    const sos = inc.deliveries.find((d) => d.phone === ES && d.kind === 'sos');
    const body = tw.accepted.filter((m) => m.to === ES).at(-1)?.body ?? '';
    expect(sos?.status).toBe('sent');
    expect(body).toContain(textTime(expiresAt, 'es', 'Asia/Kolkata'));
    expect(body).toContain('GMT+5:30');
  });

  it('a time zone that is not an IANA name is refused (unknown_time_zone), and no timer is armed', async () => {
    const token = v.token('tz-refused');
    const r = await v.api(token, 'POST', '/v1/timers', { durationSeconds: 60, timeZone: 'Moon/Base' });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('unknown_time_zone');
    expect((await v.api(token, 'GET', '/v1/timers')).body.timers).toEqual([]);
  });
});

describe('bad values are refused with their own code, and change nothing', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['a contact language without texts', { contacts: [{ name: 'A', phone: EN, language: 'fr' }] }, 'unsupported_language'],
    ['a default language without texts', { contacts: [], language: 'klingon' }, 'unsupported_language'],
    ['a time zone that is not an IANA name', { contacts: [], timeZone: 'Mars/Olympus' }, 'unknown_time_zone'],
    ['an offset instead of a zone name', { contacts: [], timeZone: '+02:00' }, 'unknown_time_zone'],
    ['a time zone that is not text', { contacts: [], timeZone: 2 }, 'validation_failed'],
  ];
  it.each(cases)('%s', async (_, body, code) => {
    const token = v.token('refused');
    await v.api(token, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Kept', phone: ES }], language: 'es', timeZone: 'America/Bogota' });
    const r = await v.api(token, 'PUT', '/v1/me/contacts', body);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe(code);
    const got = await v.api(token, 'GET', '/v1/me/contacts');
    expect(got.body).toMatchObject({ contacts: [{ name: 'Kept', phone: ES }], language: 'es', timeZone: 'America/Bogota' });
  });
});
