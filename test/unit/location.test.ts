import { describe, expect, it } from 'vitest';
import {
  fixTimeProblem,
  fresher,
  haversineMeters,
  keepFix,
  MIN_MOVE_METERS,
  movedBeyond,
  rateDecision,
} from '../../src/domain/location.js';
import { mapLink, MAX_SMS_CHARS } from '../../src/domain/messages.js';
import { ageIn, movedMessage, sosMessage } from '../../src/texts/render.js';

// one degree of latitude is ~111.2 km everywhere; 10 m is ~0.0000899°
const NORTH_1M = 1 / 111_195;

describe('haversineMeters', () => {
  it('is zero for the same point and symmetric', () => {
    const a = { lat: 48.8584, lng: 2.2945 };
    const b = { lat: 48.8606, lng: 2.3376 };
    expect(haversineMeters(a, a)).toBe(0);
    expect(haversineMeters(a, b)).toBeCloseTo(haversineMeters(b, a), 9);
  });

  it('matches known distances', () => {
    // Eiffel Tower → Louvre pyramid: about 3.16 km
    expect(haversineMeters({ lat: 48.8584, lng: 2.2945 }, { lat: 48.8606, lng: 2.3376 })).toBeGreaterThan(3100);
    expect(haversineMeters({ lat: 48.8584, lng: 2.2945 }, { lat: 48.8606, lng: 2.3376 })).toBeLessThan(3200);
    // a quarter of the equator: about 10 007.5 km
    expect(haversineMeters({ lat: 0, lng: 0 }, { lat: 0, lng: 90 }) / 1000).toBeCloseTo(10_007.5, 0);
    // one degree of latitude
    expect(haversineMeters({ lat: 10, lng: 20 }, { lat: 11, lng: 20 })).toBeCloseTo(111_195, -1);
  });

  it('works across the antimeridian and at the poles', () => {
    expect(haversineMeters({ lat: 0, lng: 179.9999 }, { lat: 0, lng: -179.9999 })).toBeLessThan(25);
    expect(haversineMeters({ lat: 90, lng: 0 }, { lat: 90, lng: 120 })).toBeLessThan(1e-6);
  });
});

describe('keepFix (fixes under 10 m from the last kept one are dropped)', () => {
  const last = { lat: 52.52, lng: 13.405 };
  it('keeps the first fix', () => expect(keepFix(null, last)).toBe(true));
  it('drops a fix 9 m away and the same point', () => {
    expect(keepFix(last, last)).toBe(false);
    expect(keepFix(last, { lat: last.lat + 9 * NORTH_1M, lng: last.lng })).toBe(false);
  });
  it('keeps a fix 11 m away', () => expect(keepFix(last, { lat: last.lat + 11 * NORTH_1M, lng: last.lng })).toBe(true));
  it('the threshold is 10 m', () => expect(MIN_MOVE_METERS).toBe(10));
});

describe('ageIn (English)', () => {
  it.each([
    [0, 'just now'],
    [59_999, 'just now'],
    [60_000, '1 min ago'],
    [2 * 60_000 + 10_000, '2 min ago'],
    [59 * 60_000, '59 min ago'],
    [60 * 60_000, '1 h ago'],
    [125 * 60_000, '2 h 5 min ago'],
    [-5000, 'just now'],
  ])('%i ms → %s', (ms, text) => expect(ageIn('en', ms)).toBe(text));
});

describe('fixTimeProblem', () => {
  const now = new Date('2030-01-01T12:00:00Z');
  const started = new Date('2030-01-01T11:00:00Z');
  it('accepts a fix between the start and now (and a little clock skew)', () => {
    expect(fixTimeProblem(new Date('2030-01-01T11:30:00Z'), now, started)).toBeNull();
    expect(fixTimeProblem(new Date(now.getTime() + 2000), now, started)).toBeNull();
  });
  it('refuses a fix in the future and one older than the timer', () => {
    expect(fixTimeProblem(new Date(now.getTime() + 60_000), now, started)).toBe('in_future');
    expect(fixTimeProblem(new Date(started.getTime() - 1), now, started)).toBe('before_timer');
  });
});

describe('fresher', () => {
  const a = { lat: 1, lng: 1, at: new Date(1000) };
  const b = { lat: 2, lng: 2, at: new Date(2000) };
  it('picks the later fix, either side, and copes with nulls', () => {
    expect(fresher(a, b)).toBe(b);
    expect(fresher(b, a)).toBe(b);
    expect(fresher(null, a)).toBe(a);
    expect(fresher(a, undefined)).toBe(a);
    expect(fresher(null, null)).toBeNull();
  });
});

describe('rateDecision', () => {
  const rule = { minIntervalMs: 5000, perMinute: 3 };
  it('refuses a fix within the interval of the last kept one, saying how long to wait', () => {
    expect(rateDecision(rule, 10_000, [], 7000)).toEqual({ ok: false, retryAfterMs: 2000 });
    expect(rateDecision(rule, 12_000, [], 7000)).toEqual({ ok: true });
  });
  it('refuses the post over the per-minute budget until the oldest leaves the window', () => {
    expect(rateDecision(rule, 61_000, [10_000, 20_000], undefined)).toEqual({ ok: true });
    expect(rateDecision(rule, 61_000, [10_000, 20_000, 30_000], undefined)).toEqual({ ok: false, retryAfterMs: 9000 });
    expect(rateDecision(rule, 71_000, [10_000, 20_000, 30_000], undefined)).toEqual({ ok: true });
  });
});

describe('movedBeyond', () => {
  const sos = { lat: 52.52, lng: 13.405 };
  it('is true only beyond the distance, and false without an SOS point', () => {
    expect(movedBeyond(sos, { lat: sos.lat + 600 * NORTH_1M, lng: sos.lng }, 500)).toBe(true);
    expect(movedBeyond(sos, { lat: sos.lat + 400 * NORTH_1M, lng: sos.lng }, 500)).toBe(false);
    expect(movedBeyond(undefined, sos, 500)).toBe(false);
  });
});

describe('SOS text with a live fix', () => {
  const deadline = new Date('2030-06-01T18:45:30.000Z');
  const armed = { lat: 37.7749, lng: -122.4194 };
  const moved = { lat: 37.8049, lng: -122.4094 };

  it('says where the person was last seen and how long ago, not the armed point', () => {
    const body = sosMessage({ personName: 'Alice', location: armed, lastSeen: { point: moved, ageMs: 2 * 60_000 + 5000 }, deadline });
    expect(body).toContain(`Last seen 2 min ago at ${mapLink(moved)}`);
    expect(body).not.toContain(mapLink(armed));
    expect(body.length).toBeLessThanOrEqual(MAX_SMS_CHARS);
  });

  it('without a live fix keeps the armed point', () => {
    expect(sosMessage({ location: armed, deadline })).toContain(`Last known location: ${mapLink(armed)}`);
  });

  it('names whom they were meeting only when given, sanitised like every name', () => {
    expect(sosMessage({ deadline })).not.toContain('meeting Bob');
    const body = sosMessage({ meetingName: 'Bob\u202e from evil.com', deadline });
    expect(body).toContain('(meeting Bob from evil[.]com)');
    expect(body).not.toContain('\u202e');
  });

  it('stays within the SMS limit with long names and keeps the whole link', () => {
    const body = sosMessage({
      personName: 'A'.repeat(500),
      locationName: 'B'.repeat(500),
      meetingName: 'C'.repeat(500),
      lastSeen: { point: { lat: -89.99999, lng: -179.99999 }, ageMs: 1000 * 60_000 },
      deadline,
    });
    expect(body.length).toBeLessThanOrEqual(MAX_SMS_CHARS);
    expect(body).toContain(mapLink({ lat: -89.99999, lng: -179.99999 }));
  });

  it('the moved follow-up carries the new point and its age', () => {
    const body = movedMessage({ personName: 'Alice', lastSeen: { point: moved, ageMs: 0 } });
    expect(body).toContain(`Last seen just now at ${mapLink(moved)}`);
    expect(body).toContain('Alice');
    expect(body.length).toBeLessThanOrEqual(MAX_SMS_CHARS);
  });
});
