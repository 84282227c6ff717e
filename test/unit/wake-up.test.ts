/**
 * WakeUp measures on a monotonic clock (issue 35, item 11): a step of the wall clock between
 * two requests must not keep the earlier-asked wake-up from being set. Timers are faked (only
 * setTimeout/clearTimeout), the wall clock is stepped by hand; nothing waits for real time.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WakeUp } from '../../src/worker/wake-up.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('WakeUp', () => {
  it('a wall clock stepped forward an hour does not delay a sooner wake-up', () => {
    let fired = 0;
    const wake = new WakeUp(() => fired++, 10_000);
    const wall = Date.now();
    wake.atMost(5_000);
    // NTP (or a resumed VM) steps the wall clock forward; the monotonic clock does not move
    vi.spyOn(Date, 'now').mockReturnValue(wall + 3_600_000);
    wake.atMost(100);
    vi.advanceTimersByTime(150);
    expect(fired).toBe(1);
    wake.stop();
  });

  it('only ever moves earlier: a later request while one is set changes nothing', () => {
    let fired = 0;
    let mono = 0;
    const wake = new WakeUp(
      () => fired++,
      10_000,
      () => mono,
    );
    wake.atMost(1_000);
    mono = 10;
    wake.atMost(5_000);
    vi.advanceTimersByTime(1_000);
    expect(fired).toBe(1);
    vi.advanceTimersByTime(5_000);
    expect(fired).toBe(1);
    wake.stop();
  });

  it('clamps to maxAheadMs and stops for good', () => {
    let fired = 0;
    const wake = new WakeUp(() => fired++, 2_000);
    wake.atMost(Number.POSITIVE_INFINITY);
    vi.advanceTimersByTime(2_000);
    expect(fired).toBe(1);
    wake.stop();
    wake.atMost(0);
    vi.advanceTimersByTime(10);
    expect(fired).toBe(1);
  });
});
