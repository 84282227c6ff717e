/**
 * The SMS caps (../domain/sms-caps.ts) applied to a real incident: reads the counts from the
 * store and picks the recipients. An SOS and the text that ends it go to every contact, never
 * held; a follow-up (`moved`) over a cap is created as held (superseded, `lastError`
 * `held_<reason>`, never sent) so the incident says why, a warning is logged (no numbers) and
 * `vigil_sms_capped_total{reason}` counts it.
 *
 * The budget is read, then deliveries are inserted: two follow-ups of one person racing could
 * both pass, overshooting by at most one incident's worth. A cap is a budget, not an invariant
 * of the store.
 */
import type { Contact } from '../domain/contact.js';
import { FINAL_DELIVERY, sosMayHaveReached, wantsAllClear, type Delivery } from '../domain/delivery.js';
import type { Incident } from '../domain/incident.js';
import { CAP_WINDOW_MS, followUpAllowance, heldError, makeSmsCaps, type CapReason, type SmsCaps } from '../domain/sms-caps.js';
import type { Store } from '../store/port.js';

export interface SmsBudgetReporting {
  /** where a capped creation is reported as a warning; default: nowhere */
  log?: { warn(obj: object, msg: string): void };
  /** `vigil_sms_capped_total{reason}`; default: none */
  metrics?: { smsCapped: { inc(labels: { reason: CapReason }, value?: number): void } };
}

type BudgetStore = Pick<Store, 'now' | 'countDeliveriesSince' | 'deliveriesFor'>;

/** One escalation of a batch: its incident (planned id when it does not exist yet) and the person's contacts. */
export interface SosPlan {
  incident: Pick<Incident, 'id' | 'userId'>;
  /** false: the incident is new, so it has no deliveries yet */
  exists: boolean;
  contacts: Contact[];
}

/** Follow-up recipients: those it goes to, and those a cap held back (recorded as held, with the reason). */
export interface FollowUps {
  send: Delivery[];
  held: { sos: Delivery; reason: CapReason; lastError: string }[];
}

/** A text that never left (superseded or cancelled before any attempt) is not one the caps count. */
const handedOrOnItsWay = (d: Delivery): boolean => d.status !== 'superseded' || d.attempts > 0;

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

  /** The contacts that get this incident's SOS: all of them, in the person's order (an SOS is never held by a cap). */
  sosRecipients(_incident: Pick<Incident, 'id' | 'userId'>, contacts: Contact[]): Promise<Contact[]> {
    return Promise.resolve(contacts);
  }

  /** sosRecipients for a batch of escalations (no store read: nothing to count). */
  sosRecipientsBatch(plans: SosPlan[]): Promise<Contact[][]> {
    return Promise.resolve(plans.map((p) => p.contacts));
  }

  /**
   * The SOS deliveries whose contacts get the text that ends the SOS (contact order first):
   * those whose SOS went out or may have; an SOS that never left, or failed for good, gets
   * none. Never held by a cap: a contact who was alarmed hears that it is over.
   */
  async allClearRecipients(incident: Incident, contactOrder: string[]): Promise<Delivery[]> {
    const mine = await this.store.deliveriesFor([incident.id]);
    const done = new Set(mine.filter((d) => d.kind === 'all_clear').map((d) => d.contactId));
    const rank = (id: string) => {
      const i = contactOrder.indexOf(id);
      return i === -1 ? contactOrder.length : i;
    };
    return mine
      .filter((d) => d.kind === 'sos' && wantsAllClear(d) && !done.has(d.contactId))
      .sort((x, y) => rank(x.contactId) - rank(y.contactId));
  }

  /**
   * The SOS deliveries whose contacts get the one `moved` follow-up: those whose SOS went
   * out, may have, or still may (pending); none once this incident has a follow-up. Within
   * what is left of the per-incident cap and of the person's day; the rest are held.
   */
  async movedRecipients(incident: Incident): Promise<FollowUps> {
    const now = await this.store.now();
    const [dayTexts, mine] = await Promise.all([
      this.store.countDeliveriesSince(incident.userId, new Date(now.getTime() - CAP_WINDOW_MS)),
      this.store.deliveriesFor([incident.id]),
    ]);
    if (mine.some((d) => d.kind === 'moved')) return { send: [], held: [] };
    const todo = mine.filter((d) => d.kind === 'sos' && (!FINAL_DELIVERY.includes(d.status) || sosMayHaveReached(d)));
    const a = followUpAllowance(this, { wanted: todo.length, incidentTexts: mine.filter(handedOrOnItsWay).length, dayTexts });
    this.report(incident, a.capped, a.reason, { smsInLast24h: dayTexts });
    const reason = a.reason;
    return {
      send: todo.slice(0, a.allowed),
      held: reason === undefined ? [] : todo.slice(a.allowed).map((sos) => ({ sos, reason, lastError: heldError(reason) })),
    };
  }

  private report(incident: Pick<Incident, 'id' | 'userId'>, capped: number, reason: CapReason | undefined, extra: object): void {
    if (capped === 0 || reason === undefined) return;
    this.reporting.metrics?.smsCapped.inc({ reason }, capped);
    this.reporting.log?.warn(
      {
        incident: incident.id,
        user: incident.userId,
        kind: 'moved',
        reason,
        capped,
        maxPerIncident: this.maxPerIncident,
        maxPerUserPerDay: this.maxPerUserPerDay,
        ...extra,
      },
      'SMS cap reached: follow-ups over the cap were recorded as held, not sent',
    );
  }
}
