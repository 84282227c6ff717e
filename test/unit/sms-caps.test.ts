import { describe, expect, it } from 'vitest';
import { allClearAllowance, makeSmsCaps, sosAllowance } from '../../src/domain/sms-caps.js';

describe('allowance arithmetic (pure)', () => {
  const caps = { maxPerIncident: 12, maxPerUserPerDay: 5 };
  it('the first SOS of the window is never held by the day cap, only by the incident cap', () => {
    expect(sosAllowance({ maxPerIncident: 12, maxPerUserPerDay: 2 }, { wanted: 5, existing: 0, usedElsewhere: 0 })).toEqual({
      allowed: 5,
      capped: 0,
    });
    expect(sosAllowance({ maxPerIncident: 3, maxPerUserPerDay: 60 }, { wanted: 5, existing: 0, usedElsewhere: 0 })).toEqual({
      allowed: 3,
      capped: 2,
      reason: 'per_incident',
    });
  });
  it('later SOS get what is left of the day, and a repair keeps what was already created', () => {
    expect(sosAllowance(caps, { wanted: 3, existing: 0, usedElsewhere: 3 })).toEqual({ allowed: 2, capped: 1, reason: 'per_day' });
    expect(sosAllowance(caps, { wanted: 3, existing: 0, usedElsewhere: 9 })).toEqual({ allowed: 0, capped: 3, reason: 'per_day' });
    expect(sosAllowance(caps, { wanted: 3, existing: 2, usedElsewhere: 9 })).toEqual({ allowed: 2, capped: 1, reason: 'per_day' });
  });
  it('the all-clear gets what the SOS left of the incident cap', () => {
    expect(allClearAllowance(4, { wanted: 3, sos: 3, existing: 0 })).toEqual({ allowed: 1, capped: 2, reason: 'per_incident' });
    expect(allClearAllowance(12, { wanted: 5, sos: 5, existing: 0 })).toEqual({ allowed: 5, capped: 0 });
    expect(allClearAllowance(4, { wanted: 0, sos: 2, existing: 2 })).toEqual({ allowed: 0, capped: 0 });
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
