import { describe, expect, it } from 'vitest';
import { decide, isLive, TARGET, TIMER_STATUSES, type Decision, type TimerCommand, type TimerStatus } from '../../src/domain/timer.js';

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
          // a CAS may only start from a live state: terminal states are never resurrected
          for (const from of d.from) expect(isLive(from)).toBe(true);
        }
      });
    }
  }

  it('no command moves a terminal timer to another status', () => {
    for (const status of TIMER_STATUSES.filter((s) => !isLive(s))) {
      for (const command of COMMANDS) expect(decide(command, status).kind).not.toBe('apply');
    }
  });
});
