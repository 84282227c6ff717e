import { describe, expect, it } from 'vitest';
import {
  decide,
  isDue,
  isLive,
  LIVE,
  TARGET,
  TERMINAL,
  TIMER_STATUSES,
  type Decision,
  type TimerCommand,
  type TimerStatus,
} from '../../src/domain/timer.js';

const COMMANDS: readonly TimerCommand[] = ['extend', 'safe', 'cancel', 'expire'];

const fromLive = (to: TimerStatus): Decision => ({ kind: 'apply', from: ['active', 'extended'], to });
const noop: Decision = { kind: 'noop' };
const conflict: Decision = { kind: 'conflict' };
const falseAlarm: Decision = { kind: 'false_alarm' };

/** The whole transition table, written out by hand so a change in `decide` fails here. */
const EXPECTED: Record<TimerCommand, Record<TimerStatus, Decision>> = {
  extend: {
    active: fromLive('extended'),
    extended: fromLive('extended'),
    safe: conflict,
    cancelled: conflict,
    expired: conflict,
  },
  safe: {
    active: fromLive('safe'),
    extended: fromLive('safe'),
    safe: noop,
    cancelled: conflict,
    expired: falseAlarm,
  },
  cancel: {
    active: fromLive('cancelled'),
    extended: fromLive('cancelled'),
    safe: conflict,
    cancelled: noop,
    expired: conflict,
  },
  expire: {
    active: fromLive('expired'),
    extended: fromLive('expired'),
    safe: noop,
    cancelled: noop,
    expired: noop,
  },
};

describe('timer statuses', () => {
  it('LIVE and TERMINAL partition TIMER_STATUSES', () => {
    expect([...LIVE, ...TERMINAL].sort()).toEqual([...TIMER_STATUSES].sort());
    for (const s of LIVE) expect(TERMINAL).not.toContain(s);
  });

  it('isLive is true exactly for active and extended', () => {
    const live = TIMER_STATUSES.filter(isLive);
    expect(live).toEqual(['active', 'extended']);
  });

  it('TARGET names the status each command moves to', () => {
    expect(TARGET).toEqual({ extend: 'extended', safe: 'safe', cancel: 'cancelled', expire: 'expired' });
  });
});

describe('decide: every command from every state', () => {
  it('the table covers every (command, status) pair', () => {
    for (const c of COMMANDS) expect(Object.keys(EXPECTED[c]).sort()).toEqual([...TIMER_STATUSES].sort());
  });

  for (const command of COMMANDS) {
    for (const status of TIMER_STATUSES) {
      const expected = EXPECTED[command][status];
      it(`${command} from ${status} → ${expected.kind}${expected.kind === 'apply' ? ` ${expected.to}` : ''}`, () => {
        const d = decide(command, status);
        expect(d).toEqual(expected);
        if (d.kind === 'apply') {
          // a CAS may only start from a live state: terminal states are never resurrected (invariant 6)
          for (const from of d.from) expect(isLive(from)).toBe(true);
        }
      });
    }
  }

  it('invariant 6: no command moves a terminal timer to another status', () => {
    for (const status of TERMINAL) {
      for (const command of COMMANDS) expect(decide(command, status).kind).not.toBe('apply');
    }
  });
});

describe('isDue', () => {
  const now = new Date('2030-01-01T12:00:00.000Z');
  const at = (ms: number) => new Date(now.getTime() + ms);

  const CASES: Array<[TimerStatus, number, boolean]> = [
    ['active', -1, true],
    ['active', 0, true],
    ['active', 1, false],
    ['extended', -60_000, true],
    ['extended', 0, true],
    ['extended', 1, false],
    ['safe', -1, false],
    ['cancelled', -1, false],
    ['expired', -1, false],
    ['expired', 0, false],
  ];

  it('covers every status', () => {
    expect(new Set(CASES.map(([s]) => s))).toEqual(new Set(TIMER_STATUSES));
  });

  for (const [status, offset, due] of CASES) {
    it(`${status} with deadline now${offset >= 0 ? '+' : ''}${offset}ms → ${due ? 'due' : 'not due'}`, () => {
      expect(isDue({ status, expiresAt: at(offset) }, now)).toBe(due);
    });
  }
});
