/** Moderator rules, exhaustively: which delivery may be resent, what a note may contain. */
import { describe, expect, it } from 'vitest';
import { DELIVERY_STATUSES, deliveryKey, type Delivery, type DeliveryKind, type DeliveryStatus } from '../../src/domain/delivery.js';
import { INCIDENT_STATUSES, type Incident, type IncidentStatus } from '../../src/domain/incident.js';
import { alreadyResent, NOTE_MAX_CHARS, noteProblem, resendRefusal } from '../../src/domain/moderation.js';

const t = new Date(0);
const delivery = (status: DeliveryStatus, kind: DeliveryKind = 'sos', extra: Partial<Delivery> = {}): Delivery => ({
  key: deliveryKey('inc', 'c1', kind),
  incidentId: 'inc',
  userId: 'u',
  contactId: 'c1',
  contactName: 'Sam',
  phone: '+14155550101',
  kind,
  body: 'text',
  status,
  attempts: 1,
  nextAttemptAt: t,
  createdAt: t,
  updatedAt: t,
  ...extra,
});
const incident = (status: IncidentStatus): Incident => ({
  id: 'inc',
  timerId: 'tmr',
  userId: 'u',
  status,
  deadline: t,
  createdAt: t,
  updatedAt: t,
  fence: 1,
});

describe('resendRefusal', () => {
  for (const status of DELIVERY_STATUSES)
    for (const is of INCIDENT_STATUSES)
      it(`an SOS that is ${status}, incident ${is}`, () => {
        const r = resendRefusal(delivery(status), incident(is), null);
        if (status !== 'dead' && status !== 'failed') expect(r?.code).toBe('delivery_not_resendable');
        else if (is === 'false_alarm') expect(r?.code).toBe('incident_false_alarm');
        else expect(r).toBeNull();
      });

  for (const sos of DELIVERY_STATUSES)
    it(`a dead all-clear whose SOS is ${sos}`, () => {
      const r = resendRefusal(delivery('dead', 'all_clear'), incident('false_alarm'), delivery(sos));
      // the all-clear goes only where the SOS went out (or may have)
      if (sos === 'sent' || sos === 'delivered') expect(r).toBeNull();
      else expect(r?.code).toBe('sos_not_sent');
    });

  it('an all-clear whose failed SOS may have reached the contact (ambiguous attempt) may be resent', () => {
    expect(
      resendRefusal(delivery('dead', 'all_clear'), incident('false_alarm'), delivery('dead', 'sos', { maybeAccepted: true })),
    ).toBeNull();
  });

  it('an anonymised delivery is never resent', () => {
    expect(resendRefusal(delivery('dead', 'sos', { redactedAt: t }), incident('resolved'), null)?.code).toBe('delivery_redacted');
  });

  it('alreadyResent: pending or sending after a resend only', () => {
    for (const s of DELIVERY_STATUSES) {
      expect(alreadyResent(delivery(s, 'sos', { resends: 1 }))).toBe(s === 'pending' || s === 'sending');
      expect(alreadyResent(delivery(s))).toBe(false);
    }
  });
});

describe('noteProblem', () => {
  it('accepts plain text with newlines and tabs, up to the limit', () => {
    expect(noteProblem('Called her brother.\n\tNo answer — trying again at 10:15.')).toBeNull();
    expect(noteProblem('x'.repeat(NOTE_MAX_CHARS))).toBeNull();
    expect(noteProblem('Ünïcødé 名前 🚓')).toBeNull();
  });
  it('refuses empty, too long, control, bidi and zero-width text', () => {
    for (const bad of [
      '',
      '   \n',
      'x'.repeat(NOTE_MAX_CHARS + 1),
      'a\u0000b',
      'bell\u0007',
      'esc\u001b[31m',
      'c1\u0085',
      'rlo\u202e',
      'iso\u2066x\u2069',
      'zw\u200bj',
      'bom\ufeff',
      'ls\u2028',
    ])
      expect(noteProblem(bad), JSON.stringify(bad)).not.toBeNull();
  });
});
