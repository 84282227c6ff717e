import { describe, expect, it } from 'vitest';
import { mapLink, maskPhone, MAX_SMS_CHARS, plainName } from '../../src/domain/messages.js';
import { allClearMessage, sosMessage } from '../../src/texts/render.js';

const deadline = new Date('2030-06-01T18:45:30.000Z');
const long = (c: string, n = 500) => c.repeat(n);

describe('mapLink', () => {
  it('uses five decimals for lat and lng', () => {
    expect(mapLink({ lat: 37.7749295, lng: -122.4194155 })).toBe('https://maps.google.com/?q=37.77493,-122.41942');
    expect(mapLink({ lat: 0, lng: 0 })).toBe('https://maps.google.com/?q=0.00000,0.00000');
  });
});

describe('sosMessage', () => {
  it('names the person, the place, the deadline (UTC, minutes) and the map link', () => {
    const location = { lat: 37.7749, lng: -122.4194 };
    const body = sosMessage({ personName: 'Alice', locationName: 'Blue Bottle Café', location, deadline });
    expect(body).toContain('Alice');
    expect(body).toContain('Blue Bottle Café');
    expect(body).toContain('2030-06-01 18:45 UTC');
    expect(body).toContain(mapLink(location));
    expect(body).not.toContain('No location was shared');
    expect(body.length).toBeLessThanOrEqual(MAX_SMS_CHARS);
  });

  it('says no location was shared when there is none, and falls back to a generic name', () => {
    const body = sosMessage({ deadline });
    expect(body).toContain('No location was shared.');
    expect(body).toContain('A Vigil user');
    expect(body).not.toContain('maps.google.com');
    expect(body).not.toContain(' at  ');
  });

  it('blank names fall back to the generic name', () => {
    expect(sosMessage({ personName: '   ', deadline })).toContain('A Vigil user');
  });

  it(`stays within ${MAX_SMS_CHARS} chars with 500-char names and keeps the whole map link`, () => {
    const extremes = [
      { lat: -89.99999, lng: -179.99999 },
      { lat: 90, lng: 180 },
      { lat: 0.000001, lng: -0.000001 },
    ];
    for (const location of extremes) {
      const body = sosMessage({ personName: long('N'), locationName: long('P'), location, deadline });
      expect(body.length).toBeLessThanOrEqual(MAX_SMS_CHARS);
      expect(body).toContain(mapLink(location));
      expect(body).toContain('2030-06-01 18:45 UTC');
      // the names are shortened, with a visible ellipsis
      expect(body).toContain('N...');
      expect(body).toContain('P...');
      expect(body).not.toContain(long('N', 61));
    }
  });

  it('stays within the limit with 500-char names and no location', () => {
    const body = sosMessage({ personName: long('N'), locationName: long('P'), deadline });
    expect(body.length).toBeLessThanOrEqual(MAX_SMS_CHARS);
    expect(body).toContain('No location was shared.');
  });

  it('shortening never splits a character: no lone UTF-16 surrogate (emoji names)', () => {
    const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    const body = sosMessage({ personName: '😀'.repeat(100), locationName: '🏠'.repeat(100), deadline });
    expect(body.length).toBeLessThanOrEqual(MAX_SMS_CHARS);
    expect(loneSurrogate.test(body)).toBe(false);
    expect(loneSurrogate.test(allClearMessage({ personName: '😀'.repeat(100) }))).toBe(false);
  });

  it('keeps short names whole', () => {
    const name = 'x'.repeat(60);
    expect(sosMessage({ personName: name, deadline })).toContain(`${name} did not check in`);
  });
});

describe('allClearMessage', () => {
  it('names the person and stays within the limit', () => {
    expect(allClearMessage({ personName: 'Alice' })).toContain('Alice has checked in');
    expect(allClearMessage({})).toContain('The Vigil user');
    const body = allClearMessage({ personName: long('N') });
    expect(body.length).toBeLessThanOrEqual(MAX_SMS_CHARS);
    expect(body).toContain('N...');
  });
});

describe('maskPhone', () => {
  it('keeps the "+", the first digit and the last two digits, hides the rest', () => {
    expect(maskPhone('+14155550123')).toBe('+1********23');
    expect(maskPhone('+447911123456')).toBe('+4*********56');
  });

  it('hides every digit of the subscriber number except the last two', () => {
    for (const phone of ['+14155550123', '+919876543210', '+4930123456', '+12345678']) {
      const masked = maskPhone(phone);
      expect(masked).toHaveLength(phone.length);
      const visibleDigits = masked.replace(/\D/g, '');
      expect(visibleDigits.length).toBeLessThanOrEqual(4);
      // the middle digits never appear
      expect(masked).not.toContain(phone.slice(3, -2));
    }
  });

  it('very short input is fully hidden', () => {
    for (const phone of ['', '+', '+1', '+123', '+1234']) expect(maskPhone(phone)).toBe('***');
  });
});

describe('plainName: what a person-supplied name becomes inside a text', () => {
  it('drops control characters, bidi overrides and zero-width characters', () => {
    expect(plainName('Blue\u0000 Bottle\u0007\r\nCafé')).toBe('Blue Bottle Café');
    // "Evil" written right-to-left over the rest would make the text read differently
    expect(plainName('Cafe \u202egnp.exe\u202c ok')).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/u);
    expect(plainName('A\u200bli\u2066ce\u2069\ufeff')).toBe('A li ce');
  });

  it('normalises to NFC so the same name is the same text', () => {
    expect(plainName('Cafe\u0301')).toBe('Café');
  });

  it('defangs links: no scheme, no clickable domain', () => {
    expect(plainName('https://evil.example.com/login')).toBe('evil[.]example[.]com/login');
    expect(plainName('meet at www.bad.io')).toBe('meet at bad[.]io');
    expect(plainName('Joe’s Bar, joesbar.com')).toBe('Joe’s Bar, joesbar[.]com');
  });

  it('leaves ordinary names alone', () => {
    for (const name of ['Blue Bottle Café', 'St. Mary’s Church', 'Café 3.5 Stars', 'Zürich HB, Gleis 7', '東京駅', 'O’Brien & Sons']) {
      expect(plainName(name)).toBe(name);
    }
  });

  it('is what the SOS and the all-clear carry', () => {
    const body = sosMessage({ personName: 'Al\u202eice', locationName: 'http://phish.example/x', deadline });
    // eslint-disable-next-line no-control-regex -- asserting no control character got through
    expect(body).not.toMatch(/[\u0000-\u001f\u202a-\u202e]/u);
    expect(body).not.toContain('http://phish');
    expect(body).toContain('phish[.]example/x');
    expect(allClearMessage({ personName: '\u0007Bob\u2067' })).toContain('Bob has checked in');
  });
});
