/**
 * Caps on SMS against abuse, applied when deliveries are created (never at send time:
 * a delivery that exists is always sent, retried and dead-lettered like any other).
 *
 *   per incident  SOS + all-clear together ≤ maxPerIncident. The SOS takes what it needs
 *                 first (contact order); the all-clear gets what is left.
 *   per person    a new SOS is created only while the person's SMS of the last 24 h
 *                 (rolling, store clock) are under maxPerUserPerDay, and only up to it —
 *                 EXCEPT the first SOS of the window (no SMS in the last 24 h), which
 *                 always goes out in full (still within the per-incident cap). The
 *                 all-clear is not held by the day cap: it only follows an SOS that went
 *                 out, and withholding it leaves a contact believing someone is in danger.
 *
 * Over the cap a delivery is simply not created: a warning is logged (no numbers) and
 * `vigil_sms_capped_total{reason}` counts it. The incident itself is always opened and
 * reaches moderators, so a capped SOS still has a human watching. See docs/sms.md.
 *
 * The budget is read, then deliveries are inserted: two escalations of the same person at
 * once could both pass. A person has at most one live timer, so that takes a repair racing
 * a sweep; the overshoot is then at most one incident's worth. A cap is a budget, not an
 * invariant of the store.
 */
import type { Contact } from '../domain/contact.js';
import type { Delivery } from '../domain/delivery.js';
import type { Incident } from '../domain/incident.js';
import type { Store } from '../store/port.js';

export type CapReason = 'per_incident' | 'per_day';

/** The rolling window of the per-person cap. */
export const CAP_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface SmsCapOptions {
  /** SMS per incident, SOS and all-clear together; default 12 (SMS_MAX_PER_INCIDENT) */
  maxPerIncident?: number;
  /** SMS per person in any rolling 24 h before a new SOS is held back; default 60 (SMS_MAX_PER_USER_PER_DAY) */
  maxPerUserPerDay?: number;
  /** where a capped creation is reported as a warning; default: nowhere */
  log?: { warn(obj: object, msg: string): void };
  /** `vigil_sms_capped_total{reason}`; the Metrics object fits once it has `smsCapped`; default: none */
  metrics?: { smsCapped: { inc(labels: { reason: CapReason }, value?: number): void } };
}

type CapStore = Pick<Store, 'now' | 'countDeliveriesSince' | 'deliveriesFor'>;

/** How many of `wanted` new texts may be created, and why the rest may not. */
export interface Allowance {
  allowed: number;
  capped: number;
  reason?: CapReason;
}

/**
 * Pure: the SOS allowance. `usedElsewhere` counts the person's SMS in the window that
 * are not this incident's; `existing` counts this incident's deliveries already created
 * (a repaired escalation), which keep their place.
 */
export function sosAllowance(
  caps: { maxPerIncident: number; maxPerUserPerDay: number },
  n: { wanted: number; existing: number; usedElsewhere: number },
): Allowance {
  const incidentRoom = caps.maxPerIncident;
  // the first SOS of the window is never held back by the day cap
  const dayRoom = n.usedElsewhere === 0 ? Number.POSITIVE_INFINITY : Math.max(0, caps.maxPerUserPerDay - n.usedElsewhere);
  const allowed = Math.max(n.existing, Math.min(n.wanted, incidentRoom, dayRoom));
  const capped = Math.max(0, n.wanted - allowed);
  if (capped === 0) return { allowed, capped };
  return { allowed, capped, reason: incidentRoom <= dayRoom ? 'per_incident' : 'per_day' };
}

/** Pure: the all-clear allowance: what the SOS left of the per-incident cap. */
export function allClearAllowance(maxPerIncident: number, n: { wanted: number; sos: number; existing: number }): Allowance {
  const room = Math.max(0, maxPerIncident - n.sos - n.existing);
  const allowed = Math.min(n.wanted, room);
  const capped = n.wanted - allowed;
  return capped === 0 ? { allowed, capped } : { allowed, capped, reason: 'per_incident' };
}

export class SmsCaps {
  readonly maxPerIncident: number;
  readonly maxPerUserPerDay: number;

  constructor(
    private readonly store: CapStore,
    private readonly opts: SmsCapOptions = {},
  ) {
    this.maxPerIncident = opts.maxPerIncident ?? 12;
    this.maxPerUserPerDay = opts.maxPerUserPerDay ?? 60;
    if (!Number.isInteger(this.maxPerIncident) || this.maxPerIncident < 1) throw new Error('maxPerIncident must be an integer >= 1');
    if (!Number.isInteger(this.maxPerUserPerDay) || this.maxPerUserPerDay < 1) throw new Error('maxPerUserPerDay must be an integer >= 1');
  }

  /** The contacts (a prefix of `contacts`, in the person's order) that get this incident's SOS. */
  async sosRecipients(incident: Incident, contacts: Contact[]): Promise<Contact[]> {
    const now = await this.store.now();
    const [inWindow, mine] = await Promise.all([
      this.store.countDeliveriesSince(incident.userId, new Date(now.getTime() - CAP_WINDOW_MS)),
      this.store.deliveriesFor([incident.id]),
    ]);
    const existing = mine.filter((d) => d.kind === 'sos');
    const a = sosAllowance(this, { wanted: contacts.length, existing: existing.length, usedElsewhere: Math.max(0, inWindow - mine.length) });
    // a repair keeps what the first run created; the prefix rule makes both runs pick the same contacts
    const already = new Set(existing.map((d) => d.contactId));
    const out = contacts.filter((c, i) => i < a.allowed || already.has(c.id));
    this.report(incident, 'sos', a, { inWindow });
    return out;
  }

  /** The SOS deliveries whose contacts also get the all-clear (contact order first). */
  async allClearRecipients(incident: Incident, contactOrder: string[]): Promise<Delivery[]> {
    const mine = await this.store.deliveriesFor([incident.id]);
    const sos = mine.filter((d) => d.kind === 'sos');
    const done = new Set(mine.filter((d) => d.kind === 'all_clear').map((d) => d.contactId));
    const rank = (id: string) => {
      const i = contactOrder.indexOf(id);
      return i === -1 ? contactOrder.length : i;
    };
    const todo = sos.filter((d) => !done.has(d.contactId)).sort((x, y) => rank(x.contactId) - rank(y.contactId));
    const a = allClearAllowance(this.maxPerIncident, { wanted: todo.length, sos: sos.length, existing: done.size });
    this.report(incident, 'all_clear', a, {});
    return todo.slice(0, a.allowed);
  }

  private report(incident: Incident, kind: 'sos' | 'all_clear', a: Allowance, extra: { inWindow?: number }): void {
    if (a.capped === 0 || a.reason === undefined) return;
    this.opts.metrics?.smsCapped.inc({ reason: a.reason }, a.capped);
    this.opts.log?.warn(
      {
        incident: incident.id,
        user: incident.userId,
        kind,
        reason: a.reason,
        created: a.allowed,
        capped: a.capped,
        maxPerIncident: this.maxPerIncident,
        maxPerUserPerDay: this.maxPerUserPerDay,
        ...(extra.inWindow === undefined ? {} : { smsInLast24h: extra.inWindow }),
      },
      'SMS cap reached: deliveries over the cap were not created',
    );
  }
}
