/** Ids: RFC 9562 version-7 UUIDs behind a type prefix, ordered by the millisecond they were made. */
import { describe, expect, it } from 'vitest';
import { newId, uuidv7 } from '../../src/app/ids.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('ids', () => {
  it('are version-7 UUIDs (version and variant bits) with the millisecond in the first 48 bits', () => {
    const at = Date.UTC(2026, 11, 3, 12, 0, 0, 123);
    const id = uuidv7(at);
    expect(id).toMatch(V7);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
    expect(newId('inc')).toMatch(new RegExp(`^inc_${V7.source.slice(1)}`));
  });

  it('sort by the time they were made (a later millisecond sorts after), and never repeat', () => {
    const ids = Array.from({ length: 50 }, (_, i) => uuidv7(1_700_000_000_000 + i));
    expect([...ids].sort()).toEqual(ids);
    const same = new Set(Array.from({ length: 10_000 }, () => uuidv7(1_700_000_000_000)));
    expect(same.size).toBe(10_000);
  });
});
