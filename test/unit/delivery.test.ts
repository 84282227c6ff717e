import { describe, expect, it } from 'vitest';
import { seeded } from '../helpers/random.js';
import {
  allClearStep,
  attemptMayHaveBeenAccepted,
  backoffMs,
  DELIVERY_STATUSES,
  deliveryKey,
  FINAL_DELIVERY,
  newDelivery,
  outcomeOf,
  receiptFrom,
  recipientOf,
  wantsAllClear,
  type AttemptResult,
  type Delivery,
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

describe('newDelivery', () => {
  const to = recipientOf({ id: 'c_ab', name: 'Bo', phone: '+15550100' });

  it('keys each kind by deliveryKey and names the contact as a delivery does', () => {
    for (const kind of ['sos', 'all_clear', 'moved'] as const)
      expect(newDelivery('inc1', to, kind, 'hi')).toStrictEqual({
        key: deliveryKey('inc1', 'c_ab', kind),
        contactId: 'c_ab',
        contactName: 'Bo',
        phone: '+15550100',
        kind,
        body: 'hi',
      });
  });

  it('carries a traceparent and a held reason only when given', () => {
    expect(newDelivery('inc1', to, 'moved', 'hi', { traceparent: 'tp', held: 'held_cap' })).toMatchObject({
      traceparent: 'tp',
      held: 'held_cap',
    });
    expect(Object.keys(newDelivery('inc1', to, 'sos', 'hi', { traceparent: undefined, held: undefined }))).not.toContain('traceparent');
    expect(Object.keys(newDelivery('inc1', to, 'sos', 'hi', { held: undefined }))).not.toContain('held');
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

describe('after "I\'m safe": who may have the SOS, who gets the all-clear, when', () => {
  const sos = (over: Partial<Delivery>): Delivery => ({
    key: 'inc:c',
    incidentId: 'inc',
    userId: 'u',
    contactId: 'c',
    contactName: 'C',
    phone: '+14155550100',
    kind: 'sos',
    body: 'SOS',
    status: 'pending',
    attempts: 0,
    nextAttemptAt: new Date(0),
    createdAt: new Date(0),
    updatedAt: new Date(0),
    ...over,
  });

  it('a superseded delivery takes no receipt', () => {
    for (const to of ['sent', 'delivered', 'failed'] as const) expect(receiptFrom(to)).not.toContain('superseded');
  });

  it('an attempt may have reached the carrier unless the carrier answered: timeouts, resets and unreadable answers are ambiguous', () => {
    const r = (retryable: boolean, code: string): AttemptResult => ({ ok: false, carrier: 'x', retryable, code });
    expect(attemptMayHaveBeenAccepted({ ok: true, carrier: 'x', providerMessageId: 'p' })).toBe(true);
    for (const code of [
      'timeout',
      'net_econnreset',
      'error',
      'carrier_error',
      'carrier_threw',
      'twilio_bad_response',
      'fast2sms_bad_response',
      'attempts_exhausted',
    ]) {
      expect(attemptMayHaveBeenAccepted(r(true, code)), code).toBe(true);
    }
    for (const code of ['http_503', 'http_429', 'twilio_20429', 'net_econnrefused', 'net_enotfound'])
      expect(attemptMayHaveBeenAccepted(r(true, code)), code).toBe(false);
    for (const code of ['twilio_21211', 'fast2sms_invalid_number', 'http_400'])
      expect(attemptMayHaveBeenAccepted(r(false, code)), code).toBe(false);
  });

  it('the all-clear goes to contacts whose SOS went out or may have, and to nobody else', () => {
    expect(wantsAllClear(sos({ status: 'sent' }))).toBe(true);
    expect(wantsAllClear(sos({ status: 'delivered' }))).toBe(true);
    expect(wantsAllClear(sos({ status: 'sending' }))).toBe(true);
    expect(wantsAllClear(sos({ status: 'pending', attempts: 1, maybeAccepted: true }))).toBe(true);
    expect(wantsAllClear(sos({ status: 'dead', attempts: 3, maybeAccepted: true }))).toBe(true);
    expect(wantsAllClear(sos({ status: 'failed', providerMessageId: 'p' }))).toBe(true); // undelivered receipt after acceptance
    // resent after such a receipt (its message is an earlier one now), and the resend never went out
    expect(wantsAllClear(sos({ status: 'dead', attempts: 3, earlierMessageIds: ['p'] }))).toBe(true);
    expect(wantsAllClear(sos({ status: 'pending' }))).toBe(false);
    expect(wantsAllClear(sos({ status: 'pending', attempts: 1, lastError: 'http_503' }))).toBe(false);
    expect(wantsAllClear(sos({ status: 'failed', lastError: 'twilio_21211' }))).toBe(false);
    expect(wantsAllClear(sos({ status: 'dead', attempts: 3 }))).toBe(false);
    expect(wantsAllClear(sos({ status: 'superseded' }))).toBe(false);
    expect(wantsAllClear(sos({ status: 'sent', kind: 'all_clear' }))).toBe(false);
  });

  it('an all-clear waits while its SOS outcome is unknown, then goes only if the SOS went out or may have', () => {
    expect(allClearStep(sos({ status: 'pending' }))).toBe('wait');
    expect(allClearStep(sos({ status: 'sending' }))).toBe('wait');
    expect(allClearStep(sos({ status: 'sent' }))).toBe('send');
    expect(allClearStep(sos({ status: 'delivered' }))).toBe('send');
    expect(allClearStep(sos({ status: 'superseded', maybeAccepted: true }))).toBe('send');
    expect(allClearStep(sos({ status: 'superseded' }))).toBe('supersede');
    expect(allClearStep(sos({ status: 'failed' }))).toBe('supersede');
    expect(allClearStep(sos({ status: 'dead' }))).toBe('supersede');
    expect(allClearStep(null)).toBe('send');
  });

  it('every status but pending and sending is final', () => {
    expect([...FINAL_DELIVERY, 'pending', 'sending'].sort()).toEqual([...DELIVERY_STATUSES].sort());
  });
});
