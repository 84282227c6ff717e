/** The warning window rules and the panic SOS text. Pure. */
import { describe, expect, it } from 'vitest';
import { panicMessage } from '../../src/texts/render.js';
import { MAX_SMS_CHARS } from '../../src/domain/messages.js';
import { TIMER_STATUSES, type TimerStatus } from '../../src/domain/timer.js';
import { inWarningWindow, isDue, warningKey } from '../../src/domain/warning.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const timer = (o: { status?: TimerStatus; durationMs?: number; warned?: boolean } = {}) => ({
  status: o.status ?? ('active' as TimerStatus),
  startedAt: new Date(T0),
  expiresAt: new Date(T0 + (o.durationMs ?? 600_000)),
  warnedAt: o.warned ? new Date(T0) : undefined,
});
const at = (ms: number) => new Date(T0 + ms);
const W = { beforeMs: 120_000, graceMs: 60_000 };

describe('inWarningWindow', () => {
  it('opens `before` the deadline and closes when the grace has passed', () => {
    expect(inWarningWindow(timer(), at(479_999), W)).toBe(false);
    expect(inWarningWindow(timer(), at(480_000), W)).toBe(true);
    expect(inWarningWindow(timer(), at(600_000), W)).toBe(true);
    expect(inWarningWindow(timer(), at(659_999), W)).toBe(true);
    expect(inWarningWindow(timer(), at(660_000), W)).toBe(false);
  });

  it('only live timers, only once, never when off, never for a timer shorter than the lead', () => {
    for (const status of TIMER_STATUSES)
      expect(inWarningWindow(timer({ status }), at(500_000), W)).toBe(status === 'active' || status === 'extended');
    expect(inWarningWindow(timer({ warned: true }), at(500_000), W)).toBe(false);
    expect(inWarningWindow(timer(), at(500_000), { beforeMs: 0, graceMs: 0 })).toBe(false);
    expect(inWarningWindow(timer({ durationMs: 120_000 }), at(60_000), W)).toBe(false);
    expect(inWarningWindow(timer({ durationMs: 120_001 }), at(60_000), W)).toBe(true);
  });

  it('isDue waits for the grace; the warning key counts the extensions', () => {
    expect(isDue(timer(), at(600_000), 0)).toBe(true);
    expect(isDue(timer(), at(600_000), 60_000)).toBe(false);
    expect(isDue(timer(), at(660_000), 60_000)).toBe(true);
    expect(isDue(timer({ status: 'safe' }), at(900_000), 0)).toBe(false);
    expect(warningKey({ id: 't1', extensions: 2 })).toBe('warning:t1:2');
  });
});

describe('panicMessage', () => {
  it('names the person, the place, the map link and the note; link-like text defanged; within the SMS limit', () => {
    const m = panicMessage({
      personName: 'Ann',
      locationName: 'Pier 39',
      location: { lat: 37.8, lng: -122.4 },
      raisedAt: new Date(T0),
      note: 'see evil.com',
    });
    expect(m).toContain('Ann pressed the panic button at Pier 39 at 2026-01-01 12:00 UTC.');
    expect(m).toContain('https://maps.google.com/?q=37.80000,-122.40000');
    expect(m).toContain('Their note: "see evil[.]com"');
    const long = panicMessage({
      personName: 'x'.repeat(500),
      locationName: 'y'.repeat(500),
      raisedAt: new Date(T0),
      note: 'z'.repeat(280),
    });
    expect(long.length).toBeLessThanOrEqual(MAX_SMS_CHARS);
  });
});
