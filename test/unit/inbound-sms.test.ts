/** Reply keywords and answers (src/domain/inbound-sms.ts): every keyword, and no answer carries what was sent. */
import { describe, expect, it } from 'vitest';
import { INBOUND_OUTCOMES, keywordOf, replyText, twimlAnswer } from '../../src/domain/inbound-sms.js';

describe('keywordOf', () => {
  it.each([
    ['YES', 'yes'],
    [' yes ', 'yes'],
    ['Ok', 'yes'],
    ['1', 'yes'],
    ['STOP', 'stop'],
    ['stopall', 'stop'],
    ['Unsubscribe', 'stop'],
    ['cancel', 'stop'],
    ['END', 'stop'],
    ['quit\n', 'stop'],
    ['START', 'start'],
    ['unstop', 'start'],
    ['help', 'help'],
    ['INFO', 'help'],
  ])('%j is %s', (body, kw) => expect(keywordOf(body)).toBe(kw));

  it.each(['', 'yes please', 'stop it now', 'constructor', '__proto__', 'toString', '11', 'Y E S'])('%j is other', (body) =>
    expect(keywordOf(body)).toBe('other'),
  );
  it('a missing body is other', () => expect(keywordOf(undefined)).toBe('other'));
});

describe('answers', () => {
  it('every outcome has a short fixed answer or none, each well-formed TwiML within one SMS segment', () => {
    for (const o of INBOUND_OUTCOMES) {
      const t = replyText(o);
      if (t !== undefined) expect(t.length).toBeLessThanOrEqual(160);
      const xml = twimlAnswer(t);
      expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?><Response')).toBe(true);
    }
    expect(twimlAnswer(undefined)).toBe('<?xml version="1.0" encoding="UTF-8"?><Response/>');
  });

  it('escapes XML in an answer', () => {
    expect(twimlAnswer(`a & b <c> "d" 'e'`)).toContain('<Message>a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos;</Message>');
  });
});
