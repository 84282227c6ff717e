import { describe, expect, it } from 'vitest';
import {
  decideIncident,
  INCIDENT_STATUSES,
  OPEN_INCIDENT,
  type IncidentCommand,
  type IncidentDecision,
  type IncidentStatus,
} from '../../src/domain/incident.js';

const COMMANDS: readonly IncidentCommand[] = ['acknowledge', 'resolve', 'false_alarm'];

const apply = (from: IncidentStatus[], to: IncidentStatus): IncidentDecision => ({ kind: 'apply', from, to });
const noop: IncidentDecision = { kind: 'noop' };
const conflict: IncidentDecision = { kind: 'conflict' };

/** Written out by hand so any change in `decideIncident` fails here. */
const EXPECTED: Record<IncidentCommand, Record<IncidentStatus, IncidentDecision>> = {
  acknowledge: {
    active: apply(['active'], 'acknowledged'),
    acknowledged: noop,
    resolved: conflict,
    false_alarm: conflict,
  },
  resolve: {
    active: apply(['active', 'acknowledged'], 'resolved'),
    acknowledged: apply(['active', 'acknowledged'], 'resolved'),
    resolved: noop,
    false_alarm: conflict,
  },
  false_alarm: {
    active: apply(['active', 'acknowledged'], 'false_alarm'),
    acknowledged: apply(['active', 'acknowledged'], 'false_alarm'),
    resolved: conflict,
    false_alarm: noop,
  },
};

describe('incident statuses', () => {
  it('open incidents are active and acknowledged', () => {
    expect([...OPEN_INCIDENT]).toEqual(['active', 'acknowledged']);
    for (const s of OPEN_INCIDENT) expect(INCIDENT_STATUSES).toContain(s);
  });
});

describe('decideIncident: every command from every state', () => {
  it('the table covers every (command, status) pair', () => {
    for (const c of COMMANDS) expect(Object.keys(EXPECTED[c]).sort()).toEqual([...INCIDENT_STATUSES].sort());
  });

  for (const command of COMMANDS) {
    for (const status of INCIDENT_STATUSES) {
      const expected = EXPECTED[command][status];
      it(`${command} from ${status} → ${expected.kind}${expected.kind === 'apply' ? ` ${expected.to}` : ''}`, () => {
        const d = decideIncident(command, status);
        expect(d).toEqual(expected);
        if (d.kind === 'apply') {
          // the CAS must admit the current state, and only open states
          expect(d.from).toContain(status);
          for (const from of d.from) expect(OPEN_INCIDENT).toContain(from);
        }
      });
    }
  }

  it('closed incidents (resolved, false_alarm) are never reopened or moved', () => {
    for (const status of INCIDENT_STATUSES.filter((s) => !OPEN_INCIDENT.includes(s))) {
      for (const command of COMMANDS) expect(decideIncident(command, status).kind).not.toBe('apply');
    }
  });
});
