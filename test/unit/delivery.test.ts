import { describe, expect, it } from 'vitest';
import { seeded } from '../helpers/random.js';
import {
  backoffMs,
  DELIVERY_STATUSES,
  deliveryKey,
  outcomeOf,
  receiptFrom,
  type AttemptResult,
  type DeliveryStatus,
  type RetryPolicy,
} from '../../src/domain/delivery.js';

const fixed = (v: number) => () => v;
const POLICY: RetryPolicy = { maxAttempts: 4, baseMs: 1000, capMs: 5000 };


describe('deliveryKey', () => {
  it('sos key is incidentId:contactId, all_clear adds the kind', () => {
    expect(deliveryKey('inc1', 'c_ab', 'sos')).toBe('inc1:c_ab');
    expect(deliveryKey('inc1', 'c_ab', 'all_clear')).toBe('inc1:c_ab:all_clear');
  });
});

describe('backoffMs (full jitter)', () => {
  it('random 0 → 0 for every attempt', () => {
    for (let attempt = 1; attempt <= 10; attempt++) expect(backoffMs(POLICY, attempt, fixed(0))).toBe(0);
  });

  it('random 0.999 → just under the ceiling min(cap, base·2^(attempt-1))', () => {
    const CEILINGS: Array<[number, number]> = [
      [1, 1000],
      [2, 2000],
      [3, 4000],
      [4, 5000], // 8000 capped
      [5, 5000],
      [30, 5000],
    ];
    for (const [attempt, ceiling] of CEILINGS) {
      const ms = backoffMs(POLICY, attempt, fixed(0.999));
      expect(ms, `attempt ${attempt}`).toBe(Math.floor(0.999 * ceiling));
      expect(ms).toBeLessThan(ceiling);
      expect(ms).toBeGreaterThanOrEqual(ceiling - ceiling / 500);
    }
  });

  it('grows exponentially until the cap (same random, doubled delay)', () => {
    const big: RetryPolicy = { maxAttempts: 20, baseMs: 100, capMs: 1_000_000 };
    for (let attempt = 1; attempt < 12; attempt++) {
      expect(backoffMs(big, attempt + 1, fixed(0.5))).toBe(2 * backoffMs(big, attempt, fixed(0.5)));
    }
  });

  it('never exceeds the cap, even at huge attempt numbers', () => {
    const policy: RetryPolicy = { maxAttempts: 6, baseMs: 1000, capMs: 60_000 };
    for (const attempt of [1, 5, 10, 50, 1000, 1e6]) {
      const ms = backoffMs(policy, attempt, fixed(0.999999));
      expect(Number.isFinite(ms)).toBe(true);
      expect(ms).toBeLessThanOrEqual(policy.capMs);
    }
  });

  it('attempt 0 or below is treated as the first attempt', () => {
    expect(backoffMs(POLICY, 0, fixed(0.5))).toBe(500);
    expect(backoffMs(POLICY, -3, fixed(0.5))).toBe(500);
  });

  it('seeded samples stay within [0, ceiling) and are integers', () => {
    const rnd = seeded(42);
    for (let i = 0; i < 2000; i++) {
      const attempt = 1 + (i % 8);
      const ceiling = Math.min(POLICY.capMs, POLICY.baseMs * 2 ** (attempt - 1));
      const ms = backoffMs(POLICY, attempt, rnd);
      expect(Number.isInteger(ms)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThan(ceiling);
    }
  });
});

describe('outcomeOf', () => {
  const ok: AttemptResult = { ok: true, carrier: 'twilio', providerMessageId: 'SM123' };
  const permanent: AttemptResult = { ok: false, carrier: 'twilio', retryable: false, code: 'invalid_number' };
  const retryable: AttemptResult = { ok: false, carrier: 'twilio', retryable: true, code: 'timeout' };

  it('ok → sent with the provider message id, on any attempt', () => {
    for (let attempt = 1; attempt <= POLICY.maxAttempts; attempt++) {
      expect(outcomeOf(POLICY, attempt, ok, fixed(0.5))).toEqual({ status: 'sent', providerMessageId: 'SM123' });
    }
  });

  it('permanent failure → failed, never retried, even on the first attempt', () => {
    for (let attempt = 1; attempt <= POLICY.maxAttempts; attempt++) {
      expect(outcomeOf(POLICY, attempt, permanent, fixed(0.5))).toEqual({ status: 'failed', error: 'invalid_number' });
    }
  });

  it('retryable with attempts left → pending with the backoff of that attempt', () => {
    for (let attempt = 1; attempt < POLICY.maxAttempts; attempt++) {
      expect(outcomeOf(POLICY, attempt, retryable, fixed(0.5))).toEqual({
        status: 'pending',
        error: 'timeout',
        retryInMs: backoffMs(POLICY, attempt, fixed(0.5)),
      });
    }
    expect(outcomeOf(POLICY, 1, retryable, fixed(0.5))).toMatchObject({ retryInMs: 500 });
    expect(outcomeOf(POLICY, 3, retryable, fixed(0.5))).toMatchObject({ retryInMs: 2000 });
  });

  it('retryable on the last attempt → dead (visible dead letter)', () => {
    expect(outcomeOf(POLICY, POLICY.maxAttempts, retryable, fixed(0.5))).toEqual({ status: 'dead', error: 'timeout' });
    expect(outcomeOf(POLICY, POLICY.maxAttempts + 1, retryable, fixed(0.5))).toEqual({ status: 'dead', error: 'timeout' });
  });

  it('maxAttempts 1: a retryable failure is dead at once', () => {
    expect(outcomeOf({ ...POLICY, maxAttempts: 1 }, 1, retryable, fixed(0.5))).toEqual({ status: 'dead', error: 'timeout' });
  });
});

describe('receiptFrom: receipts only move a delivery forward', () => {
  /** The allowed prior states per receipt, written out by hand. */
  const EXPECTED: Record<'sent' | 'delivered' | 'failed', DeliveryStatus[]> = {
    sent: ['sending'],
    delivered: ['sending', 'sent'],
    failed: ['sending', 'sent'],
  };

  for (const to of ['sent', 'delivered', 'failed'] as const) {
    it(`${to} applies from exactly ${EXPECTED[to].join(', ')}`, () => {
      expect([...receiptFrom(to)].sort()).toEqual([...EXPECTED[to]].sort());
    });
  }

  it('a late sent cannot apply to delivered', () => {
    expect(receiptFrom('sent')).not.toContain('delivered');
  });

  it('a duplicate receipt never applies to its own status', () => {
    for (const to of ['sent', 'delivered', 'failed'] as const) expect(receiptFrom(to)).not.toContain(to);
  });

  it('no receipt moves a final delivery (delivered, failed, dead) or a not-yet-sent pending one', () => {
    for (const to of ['sent', 'delivered', 'failed'] as const) {
      for (const s of ['delivered', 'failed', 'dead', 'pending'] as const) expect(receiptFrom(to)).not.toContain(s);
    }
  });
});
