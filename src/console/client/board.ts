/**
 * The board's state: open incidents and their deliveries, merged from REST reads and
 * events in any order. The newer `updatedAt` wins, so a late REST answer cannot undo
 * an event; closed incidents (resolved, false alarm) are final and leave the board.
 */
import { Card, type CardActions } from './card.js';
import type { Delivery, Incident, IncidentWithDeliveries, Note } from './types.js';
import { isOpen } from './types.js';

export interface BoardElements {
  active: HTMLOListElement;
  acked: HTMLOListElement;
  countActive: HTMLElement;
  countAcked: HTMLElement;
  emptyActive: HTMLElement;
  emptyAcked: HTMLElement;
}

/** What a merge did, so the caller can cue and announce. */
export type Change = 'new' | 'updated' | 'closed' | 'ignored';

const time = (iso: string | undefined) => (iso ? Date.parse(iso) : 0);
/** events mask phone numbers (`+1*******23`); REST answers carry them whole */
const masked = (phone: string | undefined) => phone?.includes('*') === true;

export class Board {
  private readonly incidents = new Map<string, Incident>();
  private readonly cards = new Map<string, Card>();
  private readonly deliveries = new Map<string, Map<string, Delivery>>();
  private readonly notes = new Map<string, Map<string, Note>>();
  /** incidents whose deliveries have been read over REST (events alone miss untried contacts) */
  private readonly loaded = new Set<string>();
  private readonly closed = new Set<string>();

  constructor(
    private readonly els: BoardElements,
    private readonly actions: CardActions,
  ) {}

  get activeCount(): number {
    return this.active.length;
  }

  /** The open incidents nobody has acknowledged. */
  get active(): Incident[] {
    return [...this.incidents.values()].filter((i) => i.status === 'active');
  }

  has(id: string): boolean {
    return this.incidents.has(id);
  }

  card(id: string): Card | undefined {
    return this.cards.get(id);
  }

  incident(id: string): Incident | undefined {
    return this.incidents.get(id);
  }

  upsert(given: Incident): Change {
    if (this.closed.has(given.id)) return 'ignored';
    const cur = this.incidents.get(given.id);
    if (cur && time(cur.updatedAt) > time(given.updatedAt)) {
      // an event (masked number) beat the REST load: the older REST copy still brings the met person's full number
      if (!masked(cur.meeting?.phone) || given.meeting?.phone === undefined || masked(given.meeting.phone)) return 'ignored';
      const patched = { ...cur, meeting: { ...cur.meeting, phone: given.meeting.phone } };
      this.incidents.set(cur.id, patched);
      this.cards.get(cur.id)?.update(patched);
      return 'updated';
    }
    // events carry the met person's number masked; keep the full one REST gave us
    const i =
      masked(given.meeting?.phone) && cur?.meeting?.phone !== undefined && !masked(cur.meeting.phone)
        ? { ...given, meeting: { ...given.meeting, phone: cur.meeting.phone } }
        : given;
    if (!isOpen(i.status)) {
      this.closed.add(i.id);
      if (!cur) return 'ignored';
      this.remove(i.id);
      return 'closed';
    }
    this.incidents.set(i.id, i);
    let card = this.cards.get(i.id);
    if (card) card.update(i);
    else {
      card = new Card(i, this.actions);
      this.cards.set(i.id, card);
      card.setDeliveries(this.loaded.has(i.id) ? this.deliveryList(i.id) : undefined);
      card.setNotes(this.noteList(i.id));
    }
    this.place();
    return cur ? 'updated' : 'new';
  }

  /** An incident with its deliveries as REST reports them. */
  upsertFull(i: IncidentWithDeliveries): Change {
    if (this.closed.has(i.id)) return 'ignored';
    const { deliveries, notes, ...incident } = i;
    this.loaded.add(i.id);
    for (const d of deliveries) this.mergeDelivery(d);
    for (const n of notes ?? []) this.mergeNote(n);
    const change = this.upsert(incident);
    this.cards.get(i.id)?.setDeliveries(this.deliveryList(i.id));
    this.cards.get(i.id)?.setNotes(this.noteList(i.id));
    return change;
  }

  /** A note from an event or the answer to adding one (notes never change, so any copy will do). */
  upsertNote(n: Note): void {
    if (this.closed.has(n.incidentId)) return;
    this.mergeNote(n);
    this.cards.get(n.incidentId)?.setNotes(this.noteList(n.incidentId));
  }

  private mergeNote(n: Note): void {
    let byId = this.notes.get(n.incidentId);
    if (!byId) this.notes.set(n.incidentId, (byId = new Map()));
    byId.set(n.id, n);
  }

  private noteList(incidentId: string): Note[] {
    return [...(this.notes.get(incidentId)?.values() ?? [])];
  }

  upsertDelivery(d: Delivery): void {
    if (this.closed.has(d.incidentId)) return;
    if (this.mergeDelivery(d) && this.loaded.has(d.incidentId))
      this.cards.get(d.incidentId)?.setDeliveries(this.deliveryList(d.incidentId));
  }

  /**
   * A full REST read of the open incidents. One missing from it was closed meanwhile —
   * unless we learnt of it after the read began (`cursorMs`), from an event.
   * Returns the incidents this read revealed that the board did not know.
   */
  replaceAll(list: IncidentWithDeliveries[], cursorMs: number): Incident[] {
    const seen = new Set(list.map((i) => i.id));
    for (const [id, cur] of this.incidents) {
      if (!seen.has(id) && time(cur.updatedAt) <= cursorMs) {
        this.closed.add(id);
        this.remove(id);
      }
    }
    const revealed: Incident[] = [];
    for (const i of list) if (this.upsertFull(i) === 'new') revealed.push(i);
    return revealed;
  }

  clear(): void {
    for (const id of [...this.incidents.keys()]) this.remove(id);
    this.closed.clear();
    this.loaded.clear();
    this.deliveries.clear();
    this.notes.clear();
  }

  tick(nowMs: number): void {
    for (const c of this.cards.values()) c.tick(nowMs);
  }

  private mergeDelivery(d: Delivery): boolean {
    let byKey = this.deliveries.get(d.incidentId);
    if (!byKey) this.deliveries.set(d.incidentId, (byKey = new Map()));
    const cur = byKey.get(d.key);
    if (cur && time(cur.updatedAt) > time(d.updatedAt)) {
      // an event (masked number) beat the REST load: the older REST copy still brings the full number
      if (!cur.phone.includes('*') || d.phone.includes('*')) return false;
      byKey.set(d.key, { ...cur, phone: d.phone });
      return true;
    }
    // events carry a masked number; keep the full one REST gave us
    const phone = d.phone.includes('*') && cur && !cur.phone.includes('*') ? cur.phone : d.phone;
    byKey.set(d.key, { ...d, phone });
    return true;
  }

  private deliveryList(incidentId: string): Delivery[] {
    return [...(this.deliveries.get(incidentId)?.values() ?? [])];
  }

  private remove(id: string): void {
    const card = this.cards.get(id);
    card?.root.remove();
    this.cards.delete(id);
    this.incidents.delete(id);
    this.deliveries.delete(id);
    this.notes.delete(id);
    this.place();
  }

  /** Active first, then acknowledged; oldest deadline first. Moves only what is out of place. */
  private place(): void {
    const byDeadline = (a: Card, b: Card) => a.deadlineMs - b.deadlineMs;
    const cards = [...this.cards.values()];
    const lanes: [HTMLOListElement, Card[]][] = [
      [this.els.active, cards.filter((c) => c.status === 'active').sort(byDeadline)],
      [this.els.acked, cards.filter((c) => c.status === 'acknowledged').sort(byDeadline)],
    ];
    const focused = document.activeElement;
    for (const [lane, want] of lanes) {
      want.forEach((c, idx) => {
        if (lane.children[idx] !== c.root) lane.insertBefore(c.root, lane.children[idx] ?? null);
      });
    }
    // moving a node drops focus: give it back (to the same control, or its card's next one)
    if (focused instanceof HTMLElement && focused !== document.activeElement) {
      const card = focused.closest('li.card');
      const target =
        focused.hidden || (focused instanceof HTMLButtonElement && focused.disabled)
          ? card?.querySelector<HTMLElement>('button:not([hidden]):not(:disabled)')
          : focused;
      if (target instanceof HTMLElement && target.isConnected) target.focus();
    }
    const nActive = lanes[0]?.[1].length ?? 0;
    const nAcked = lanes[1]?.[1].length ?? 0;
    this.els.countActive.textContent = String(nActive);
    this.els.countAcked.textContent = String(nAcked);
    this.els.emptyActive.hidden = nActive > 0;
    this.els.emptyAcked.hidden = nAcked > 0;
  }
}
