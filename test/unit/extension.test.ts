import { describe, expect, it } from 'vitest';
import { extendedDeadline } from '../../src/domain/extension.js';
import { TIMER_STATUSES, isLive } from '../../src/domain/timer.js';

const start = new Date('2026-01-01T10:00:00.000Z');
const plus = (d: Date, ms: number) => new Date(d.getTime() + ms);
const CAPS = { maxExtensions: 3, maxTotalSeconds: 3600 };
const timer = { status: 'active' as const, startedAt: start, expiresAt: plus(start, 600_000), extensions: 0 };
const now = plus(start, 60_000);

describe('extension rule (domain)', () => {
  it('adds exactly the seconds to the deadline and counts the extension', () => {
    expect(extendedDeadline(timer, 120, CAPS, now)).toEqual({ expiresAt: plus(start, 720_000), extensions: 1 });
    expect(extendedDeadline({ ...timer, status: 'extended', extensions: 2 }, 1, CAPS, now)).toEqual({
      expiresAt: plus(start, 601_000),
      extensions: 3,
    });
  });

  it('invariant 6: only live timers can be extended', () => {
    for (const status of TIMER_STATUSES) expect(extendedDeadline({ ...timer, status }, 60, CAPS, now) !== null).toBe(isLive(status));
  });

  it('refused once the store clock reaches the deadline', () => {
    expect(extendedDeadline(timer, 60, CAPS, plus(timer.expiresAt, -1))).not.toBeNull();
    expect(extendedDeadline(timer, 60, CAPS, timer.expiresAt)).toBeNull();
  });

  it('refused after maxExtensions', () => {
    expect(extendedDeadline({ ...timer, extensions: 3 }, 60, CAPS, now)).toBeNull();
  });

  it('refused beyond maxTotalSeconds from the start; equal is allowed', () => {
    expect(extendedDeadline(timer, 3000, CAPS, now)?.expiresAt).toEqual(plus(start, 3_600_000));
    expect(extendedDeadline(timer, 3001, CAPS, now)).toBeNull();
  });
});
