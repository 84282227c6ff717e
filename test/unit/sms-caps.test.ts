import { describe, expect, it } from 'vitest';
import { followUpAllowance, heldError, makeSmsCaps } from '../../src/domain/sms-caps.js';

describe('follow-up allowance arithmetic (pure): the only texts a cap holds back', () => {
  const caps = { maxPerIncident: 12, maxPerUserPerDay: 5 };
  it('allows every follow-up under both caps', () => {
    expect(followUpAllowance(caps, { wanted: 3, incidentTexts: 3, dayTexts: 2 })).toEqual({ allowed: 3, capped: 0 });
  });
  it('holds what the day cap leaves no room for, naming it', () => {
    expect(followUpAllowance(caps, { wanted: 3, incidentTexts: 3, dayTexts: 4 })).toEqual({ allowed: 1, capped: 2, reason: 'per_day' });
    expect(followUpAllowance(caps, { wanted: 3, incidentTexts: 3, dayTexts: 9 })).toEqual({ allowed: 0, capped: 3, reason: 'per_day' });
  });
  it('holds what the incident cap leaves no room for, naming it', () => {
    expect(followUpAllowance({ maxPerIncident: 4, maxPerUserPerDay: 60 }, { wanted: 3, incidentTexts: 3, dayTexts: 3 })).toEqual({
      allowed: 1,
      capped: 2,
      reason: 'per_incident',
    });
  });
  it('a held text says why', () => {
    expect(heldError('per_day')).toBe('held_per_day');
    expect(heldError('per_incident')).toBe('held_per_incident');
  });
});

describe('makeSmsCaps', () => {
  it('accepts integer caps >= 1 and keeps only the caps', () => {
    expect(makeSmsCaps({ maxPerIncident: 1, maxPerUserPerDay: 1 })).toEqual({ maxPerIncident: 1, maxPerUserPerDay: 1 });
  });
  for (const [label, caps, message] of [
    ['maxPerIncident 0', { maxPerIncident: 0, maxPerUserPerDay: 60 }, /maxPerIncident/],
    ['maxPerIncident fractional', { maxPerIncident: 1.5, maxPerUserPerDay: 60 }, /maxPerIncident/],
    ['maxPerUserPerDay 0', { maxPerIncident: 12, maxPerUserPerDay: 0 }, /maxPerUserPerDay/],
    ['maxPerUserPerDay NaN', { maxPerIncident: 12, maxPerUserPerDay: Number.NaN }, /maxPerUserPerDay/],
  ] as const) {
    it(`rejects ${label}`, () => {
      expect(() => makeSmsCaps(caps)).toThrow(message);
    });
  }
});
