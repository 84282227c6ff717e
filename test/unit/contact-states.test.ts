import { describe, expect, it } from 'vitest';
import { CONTACT_STATES, sosAudience, stateOf, type Contact } from '../../src/domain/contact.js';
import { sosDeliveries } from '../../src/domain/delivery.js';
import { unreachableBy } from '../../src/domain/notification.js';

const contact = (i: number, state?: Contact['state']): Contact => ({
  id: `c${i}`,
  name: `C${i}`,
  phone: `+1415555010${i}`,
  ...(state ? { state } : {}),
});

describe('who an SOS goes to, by contact state', () => {
  it('every state: pending and confirmed are reached, declined and opted_out are held with the reason; order kept', () => {
    const list = CONTACT_STATES.map((s, i) => contact(i, s));
    const { reach, withheld } = sosAudience([contact(9), ...list]);
    expect(reach.map((c) => stateOf(c))).toEqual(['pending', 'pending', 'confirmed']);
    expect(withheld.map((w) => [w.contact.state, w.held])).toEqual([
      ['declined', 'held_contact_declined'],
      ['opted_out', 'held_contact_opted_out'],
    ]);
  });

  it('sosDeliveries: one per contact, the held ones marked (stored superseded, never sent)', () => {
    const d = sosDeliveries('inc_1', [contact(1, 'confirmed'), contact(2, 'opted_out')], (c) => `hi ${c.name}`);
    expect(d.map((x) => [x.key, x.body, x.held])).toEqual([
      ['inc_1:c1', 'hi C1', undefined],
      ['inc_1:c2', 'hi C2', 'held_contact_opted_out'],
    ]);
  });

  it('carrier codes that say a contact cannot be reached', () => {
    expect(unreachableBy('twilio_21610')).toBe('opted_out');
    expect(unreachableBy('twilio_21211')).toBe('invalid_number');
    expect(unreachableBy('twilio_21614')).toBe('invalid_number');
    for (const code of [undefined, 'http_500', 'twilio_20003', 'fast2sms_400']) expect(unreachableBy(code)).toBeUndefined();
  });
});
