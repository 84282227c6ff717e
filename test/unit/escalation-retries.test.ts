/**
 * The backoff of escalations that failed because the store was unavailable: a wait that
 * doubles per failure in a row up to the cap, half fixed and half jitter; forgotten once the
 * escalation settles or its entry is long past. On a fake monotonic clock.
 */
import { describe, expect, it } from 'vitest';
import { isTransient, DomainError, Invalid, Unavailable } from '../../src/domain/errors.js';
import { EscalationRetries } from '../../src/worker/escalation-retries.js';

function setup(random = 0.5) {
  let t = 1_000;
  const r = new EscalationRetries(
    { baseMs: 100, capMs: 1_000 },
    () => t,
    () => random,
  );
  return { r, advance: (ms: number) => (t += ms) };
}

describe('EscalationRetries', () => {
  it('a timer never failed is ready; after a transient failure it waits its backoff, then is ready again', () => {
    const { r, advance } = setup();
    expect(r.ready('a')).toBe(true);
    expect(r.failed('a')).toEqual({ retryInMs: 75, failures: 1 }); // ceiling 100: 50 fixed + 0.5·50
    expect(r.ready('a')).toBe(false);
    expect(r.ready('b')).toBe(true);
    advance(74);
    expect(r.ready('a')).toBe(false);
    advance(1);
    expect(r.ready('a')).toBe(true);
  });

  it('the wait doubles per failure in a row, up to the cap; always at least half its ceiling', () => {
    const low = setup(0);
    expect([1, 2, 3, 4, 5, 6].map(() => low.r.failed('a').retryInMs)).toEqual([50, 100, 200, 400, 500, 500]);
    const high = setup(0.999999);
    expect([1, 2, 3, 4, 5, 6].map(() => high.r.failed('a').retryInMs)).toEqual([99, 199, 399, 799, 999, 999]);
  });

  it('settled forgets the timer: the next failure starts from the first wait again', () => {
    const { r } = setup(0);
    r.failed('a');
    r.failed('a');
    r.settled('a');
    expect(r.ready('a')).toBe(true);
    expect(r.failed('a')).toEqual({ retryInMs: 50, failures: 1 });
  });

  it('entries long past their wait are forgotten (their timer was escalated elsewhere)', () => {
    const { r, advance } = setup(0);
    r.failed('gone');
    advance(10_000);
    r.failed('fresh');
    expect(r.size()).toBe(1);
  });
});

describe('isTransient', () => {
  it('the store or the lock unavailable is transient, also as the cause of another error; anything else is not', () => {
    expect(isTransient(Unavailable('store_busy', 'locked'))).toBe(true);
    expect(isTransient(Unavailable('store_write_unconfirmed', 'unknown outcome'))).toBe(true);
    expect(isTransient(new Error('wrapped', { cause: Unavailable('store_unavailable', 'down') }))).toBe(true);
    expect(isTransient(new Error('a bug'))).toBe(false);
    expect(isTransient(Invalid('out_of_range', 'a constraint the data cannot meet'))).toBe(false);
    expect(isTransient(new DomainError('conflict', 'timer_wrong_state', 'y', undefined, { cause: Unavailable('store_busy', 'z') }))).toBe(
      false,
    );
    expect(isTransient('store_busy')).toBe(false);
    expect(isTransient(undefined)).toBe(false);
  });
});
