/** The list cursor: opaque round trip, and where the next read starts (repeats allowed, gaps not). */
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, nextCursor } from '../../src/app/cursor.js';

const row = (id: string, ms: number) => ({ id, updatedAt: new Date(ms) });
const T = Date.parse('2026-06-01T12:00:00.000Z');

describe('cursor encoding', () => {
  it('round-trips a time and a keyset position, and is URL-safe', () => {
    for (const p of [{ since: new Date(T) }, { since: new Date(T), sinceId: 'tmr_abc-123' }]) {
      const c = encodeCursor(p);
      expect(c).toMatch(/^[A-Za-z0-9._-]+$/);
      expect(decodeCursor(c)).toEqual(p);
    }
  });

  it('refuses what is not a cursor', () => {
    for (const s of [
      '',
      'c1.',
      'c1.!!',
      'c1.' + Buffer.from('[]').toString('base64url'),
      'c1.' + Buffer.from('["x"]').toString('base64url'),
      'c1.' + Buffer.from('[1,""]').toString('base64url'),
      '2026-06-01T12:00:00Z',
    ])
      expect(decodeCursor(s)).toBeUndefined();
  });
});

describe('nextCursor: never zero times', () => {
  const lag = 1000;

  it('a partial page resumes from the store time less the change lag, so late commits come next time', () => {
    const r = nextCursor([row('a', T - 5000)], { since: { since: new Date(T - 10_000) }, limit: 10 }, new Date(T), lag);
    expect(r).toEqual({ cursor: { since: new Date(T - lag) }, more: false });
  });

  it('a full page resumes after its last settled record, on the keyset (records sharing its millisecond come next)', () => {
    const rows = [row('a', T - 3000), row('b', T - 2000), row('c', T - 2000), row('d', T - 10)];
    const r = nextCursor(rows, { since: { since: new Date(T - 10_000) }, limit: 4 }, new Date(T), lag);
    expect(r).toEqual({ cursor: { since: new Date(T - 2000), sinceId: 'c' }, more: true });
  });

  it('a full page of records all younger than the lag keeps the cursor: read again once settled', () => {
    const from = { since: new Date(T - 500), sinceId: 'x' };
    const r = nextCursor([row('a', T - 200), row('b', T - 100)], { since: from, limit: 2 }, new Date(T), lag);
    expect(r).toEqual({ cursor: from, more: true });
  });

  it('never moves a caller’s position backwards', () => {
    const from = { since: new Date(T - 100) };
    expect(nextCursor([], { since: from }, new Date(T), lag).cursor).toEqual(from);
  });

  it('a first read (no since) starts from the store time less the lag', () => {
    expect(nextCursor([row('a', T - 1)], {}, new Date(T), lag)).toEqual({ cursor: { since: new Date(T - lag) }, more: false });
  });
});
