import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import { checkDuration, makeLimits, type TimerLimits } from '../../src/domain/limits.js';

const OK: TimerLimits = { minSeconds: 60, maxSeconds: 86_400, maxExtensions: 5, maxTotalSeconds: 172_800 };

describe('makeLimits', () => {
  it('accepts valid limits and returns a copy', () => {
    const limits = makeLimits(OK);
    expect(limits).toEqual(OK);
    expect(limits).not.toBe(OK);
  });

  it('accepts the tightest valid limits', () => {
    expect(() => makeLimits({ minSeconds: 1, maxSeconds: 1, maxExtensions: 0, maxTotalSeconds: 1 })).not.toThrow();
  });

  const BAD: Array<[string, Partial<TimerLimits>, RegExp]> = [
    ['minSeconds 0', { minSeconds: 0 }, /minSeconds/],
    ['minSeconds negative', { minSeconds: -1 }, /minSeconds/],
    ['minSeconds fractional', { minSeconds: 1.5 }, /minSeconds/],
    ['minSeconds NaN', { minSeconds: Number.NaN }, /minSeconds/],
    ['maxSeconds below minSeconds', { maxSeconds: 59 }, /maxSeconds/],
    ['maxSeconds fractional', { maxSeconds: 3600.5 }, /maxSeconds/],
    ['maxSeconds Infinity', { maxSeconds: Number.POSITIVE_INFINITY }, /maxSeconds/],
    ['maxExtensions negative', { maxExtensions: -1 }, /maxExtensions/],
    ['maxExtensions fractional', { maxExtensions: 0.5 }, /maxExtensions/],
    ['maxTotalSeconds below maxSeconds', { maxTotalSeconds: 86_399 }, /maxTotalSeconds/],
    ['maxTotalSeconds NaN', { maxTotalSeconds: Number.NaN }, /maxTotalSeconds/],
  ];

  for (const [label, patch, message] of BAD) {
    it(`rejects ${label}`, () => {
      expect(() => makeLimits({ ...OK, ...patch })).toThrow(message);
    });
  }
});

describe('checkDuration', () => {
  const limits = makeLimits(OK);

  it('accepts integers within [min, max], bounds included', () => {
    for (const s of [60, 61, 3600, 86_399, 86_400]) expect(() => checkDuration(limits, s, 'durationSeconds')).not.toThrow();
  });

  for (const s of [59, 0, -60, 86_401, 60.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    it(`rejects ${s} with Invalid out_of_range naming the field and bounds`, () => {
      let caught: unknown;
      try {
        checkDuration(limits, s, 'seconds');
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(DomainError);
      const err = caught as DomainError;
      expect(err.kind).toBe('invalid');
      expect(err.code).toBe('out_of_range');
      expect(err.details).toEqual({ field: 'seconds', min: 60, max: 86_400 });
      expect(err.message).toContain('seconds');
    });
  }
});
