/**
 * The SMS caps (../domain/sms-caps.ts) applied to a real incident: reads the counts from
 * the store and picks the recipients. Over a cap a delivery is simply not created; a
 * warning is logged (no numbers) and `vigil_sms_capped_total{reason}` counts it. The
 * incident itself is always opened, so a capped SOS still reaches moderators.
 *
 * The budget is read, then deliveries are inserted: a repair racing a sweep for the same
 * person could both pass, overshooting by at most one incident's worth. A cap is a
 * budget, not an invariant of the store.
 */
import type { Contact } from '../domain/contact.js';
import { FINAL_DELIVERY, sosMayHaveReached, wantsAllClear, type Delivery } from '../domain/delivery.js';
import type { Incident } from '../domain/incident.js';
import {
  allClearAllowance,
  CAP_WINDOW_MS,
  makeSmsCaps,
  sosAllowance,
  type Allowance,
  type CapReason,
  type SmsCaps,
} from '../domain/sms-caps.js';
import type { Store } from '../store/port.js';

export interface SmsBudgetReporting {
  /** where a capped creation is reported as a warning; default: nowhere */
  log?: { warn(obj: object, msg: string): void };
  /** `vigil_sms_capped_total{reason}`; default: none */
  metrics?: { smsCapped: { inc(labels: { reason: CapReason }, value?: number): void } };
}

type BudgetStore = Pick<Store, 'now' | 'countDeliveriesSince' | 'deliveriesFor' | 'countDeliveriesSinceMany'>;

/** One escalation of a batch: its incident (planned id when it does not exist yet) and the person's contacts. */
export interface SosPlan {
  incident: Pick<Incident, 'id' | 'userId'>;
  /** false: the incident is new, so it has no deliveries yet (nothing to read) */
  exists: boolean;
  contacts: Contact[];
}

export class SmsBudget {
  readonly maxPerIncident: number;
  readonly maxPerUserPerDay: number;

  constructor(
    private readonly store: BudgetStore,
    caps: SmsCaps,
    private readonly reporting: SmsBudgetReporting = {},
  ) {
    const valid = makeSmsCaps(caps);
    this.maxPerIncident = valid.maxPerIncident;
    this.maxPerUserPerDay = valid.maxPerUserPerDay;
  }

  /** The contacts (a prefix of `contacts`, in the person's order) that get this incident's SOS. */
  async sosRecipients(incident: Incident, contacts: Contact[]): Promise<Contact[]> {
    const now = await this.store.now();
    const [inWindow, mine] = await Promise.all([
      this.store.countDeliveriesSince(incident.userId, new Date(now.getTime() - CAP_WINDOW_MS)),
      this.store.deliveriesFor([incident.id]),
    ]);
    const existing = mine.filter((d) => d.kind === 'sos');
    const a = sosAllowance(this, {
      wanted: contacts.length,
      existing: existing.length,
      usedElsewhere: Math.max(0, inWindow - mine.length),
    });
    // a repair keeps what the first run created; the prefix rule makes both runs pick the same contacts
    const already = new Set(existing.map((d) => d.contactId));
    const out = contacts.filter((c, i) => i < a.allowed || already.has(c.id));
    this.report(incident, 'sos', a, { inWindow });
    return out;
  }

  /**
   * sosRecipients for a batch of escalations with two reads in all (counts per person, the
   * deliveries of the incidents that exist). Two escalations of one person in the same batch
   * share that person's daily budget: the second sees what the first was allowed.
   */
  async sosRecipientsBatch(plans: SosPlan[]): Promise<Contact[][]> {
    if (plans.length === 0) return [];
    const now = await this.store.now();
    const existingIds = plans.filter((p) => p.exists).map((p) => p.incident.id);
    const [inWindow, mine] = await Promise.all([
      this.store.countDeliveriesSinceMany(
        plans.map((p) => p.incident.userId),
        new Date(now.getTime() - CAP_WINDOW_MS),
      ),
      this.store.deliveriesFor(existingIds),
    ]);
    const byIncident = new Map<string, Delivery[]>();
    for (const d of mine) byIncident.set(d.incidentId, [...(byIncident.get(d.incidentId) ?? []), d]);
    const addedFor = new Map<string, number>();
    return plans.map(({ incident, contacts }) => {
      const own = byIncident.get(incident.id) ?? [];
      const existing = own.filter((d) => d.kind === 'sos');
      const counted = (inWindow.get(incident.userId) ?? 0) + (addedFor.get(incident.userId) ?? 0);
      const a = sosAllowance(this, {
        wanted: contacts.length,
        existing: existing.length,
        usedElsewhere: Math.max(0, counted - own.length),
      });
      const already = new Set(existing.map((d) => d.contactId));
      const out = contacts.filter((c, i) => i < a.allowed || already.has(c.id));
      addedFor.set(incident.userId, (addedFor.get(incident.userId) ?? 0) + Math.max(0, out.length - existing.length));
      this.report(incident, 'sos', a, { inWindow: counted });
      return out;
    });
  }

  /**
   * The SOS deliveries whose contacts also get the all-clear (contact order first): those
   * that went out or may have; an SOS that never left, or failed for good, gets none.
   */
  async allClearRecipients(incident: Incident, contactOrder: string[]): Promise<Delivery[]> {
    const mine = await this.store.deliveriesFor([incident.id]);
    const sos = mine.filter((d) => d.kind === 'sos');
    const done = new Set(mine.filter((d) => d.kind === 'all_clear').map((d) => d.contactId));
    const rank = (id: string) => {
      const i = contactOrder.indexOf(id);
      return i === -1 ? contactOrder.length : i;
    };
    const todo = sos.filter((d) => wantsAllClear(d) && !done.has(d.contactId)).sort((x, y) => rank(x.contactId) - rank(y.contactId));
    const a = allClearAllowance(this.maxPerIncident, { wanted: todo.length, sos: sos.length, existing: done.size });
    this.report(incident, 'all_clear', a, {});
    return todo.slice(0, a.allowed);
  }

  /**
   * The SOS deliveries whose contacts get the one `moved` follow-up: those whose SOS went
   * out, may have, or still may (pending); none once this incident has a follow-up. Within
   * what is left of the per-incident cap and of the person's day cap.
   */
  async movedRecipients(incident: Incident): Promise<Delivery[]> {
    const now = await this.store.now();
    const [inWindow, mine] = await Promise.all([
      this.store.countDeliveriesSince(incident.userId, new Date(now.getTime() - CAP_WINDOW_MS)),
      this.store.deliveriesFor([incident.id]),
    ]);
    if (mine.some((d) => d.kind === 'moved')) return [];
    const todo = mine.filter((d) => d.kind === 'sos' && (!FINAL_DELIVERY.includes(d.status) || sosMayHaveReached(d)));
    const incidentRoom = this.maxPerIncident - mine.length;
    const dayRoom = this.maxPerUserPerDay - inWindow;
    const room = Math.max(0, Math.min(incidentRoom, dayRoom));
    const a: Allowance =
      todo.length <= room
        ? { allowed: todo.length, capped: 0 }
        : { allowed: room, capped: todo.length - room, reason: incidentRoom <= dayRoom ? 'per_incident' : 'per_day' };
    this.report(incident, 'moved', a, { inWindow });
    return todo.slice(0, a.allowed);
  }

  private report(
    incident: Pick<Incident, 'id' | 'userId'>,
    kind: 'sos' | 'all_clear' | 'moved',
    a: Allowance,
    extra: { inWindow?: number },
  ): void {
    if (a.capped === 0 || a.reason === undefined) return;
    this.reporting.metrics?.smsCapped.inc({ reason: a.reason }, a.capped);
    this.reporting.log?.warn(
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
