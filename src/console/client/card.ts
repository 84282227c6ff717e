/** One incident on the board. Built once, then updated in place so focus is kept. */
import { serverNow } from './clock.js';
import { clockTime, duration, el, mapUrl } from './format.js';
import { deliveryRows } from './deliveries.js';
import { TrailView } from './trail.js';
import type { Delivery, Fix, Incident, IncidentSource, Note, PanicNote } from './types.js';

const SOURCE_LABEL: Record<IncidentSource, string> = {
  timer: 'Timer ran out',
  panic: 'Panic button',
  duress: 'DURESS PIN (silent: the phone shows nothing)',
};

export interface CardActions {
  ack(id: string): void;
  resolve(id: string): void;
  timers(userId: string): void;
  /** send a dead or failed text again */
  resend(incidentId: string, key: string): void;
  /** cancel the incident's pending texts */
  cancelPending(id: string): void;
  addNote(id: string, text: string): void;
}

/** A timer id in short form (its random tail), enough to tell linked timers apart. */
const shortId = (id: string): string => (id.length > 8 ? `…${id.slice(-6)}` : id);

const who = (i: Incident) => i.displayName ?? i.userId;

export class Card {
  readonly root: HTMLLIElement;
  private readonly title = el('h4', 'card__title');
  private readonly badge = el('span', 'badge');
  private readonly newBadge = el('span', 'badge badge--new', 'New');
  private readonly ago = el('strong', 'card__ago');
  private readonly at = el('span', 'muted');
  private readonly place = el('dd');
  private readonly map = el('dd');
  private readonly meetingTerm = el('dt', undefined, 'Meeting');
  private readonly meeting = el('dd');
  private readonly linkedTerm = el('dt', undefined, 'Linked timers');
  private readonly linked = el('dd', 'card__linked');
  private readonly panicSection = el('section', 'panic-notes');
  private readonly panicList = el('ol', 'panic-notes__list');
  private readonly trail: TrailView;
  private readonly ackLine = el('p', 'card__acked muted');
  private readonly contacts = el('ul', 'deliveries');
  private readonly error = el('p', 'error');
  private readonly source = el('dd', 'card__source');
  readonly ackBtn = el('button', 'btn btn--primary');
  readonly resolveBtn = el('button', 'btn');
  private readonly timersBtn = el('button', 'btn btn--quiet');
  readonly cancelBtn = el('button', 'btn');
  private readonly notes = el('ul', 'notes');
  private readonly noteForm = el('form', 'note-form');
  readonly noteText = el('textarea', 'note-form__text');
  readonly noteBtn = el('button', 'btn');
  private incident: Incident;

  constructor(incident: Incident, actions: CardActions) {
    this.incident = incident;
    this.root = el('li', 'card');
    this.root.id = `incident-${incident.id}`;
    this.root.dataset.incidentId = incident.id;
    const titleId = `incident-${incident.id}-title`;
    this.title.id = titleId;
    this.root.setAttribute('aria-labelledby', titleId);

    const head = el('div', 'card__head');
    head.append(this.title, this.newBadge, this.badge);
    const overdue = el('p', 'card__overdue');
    overdue.append(this.ago, ' ', this.at);
    const facts = el('dl', 'card__facts');
    facts.append(
      el('dt', undefined, 'Raised by'),
      this.source,
      el('dt', undefined, 'Place'),
      this.place,
      el('dt', undefined, 'Last seen'),
      this.map,
      this.meetingTerm,
      this.meeting,
      this.linkedTerm,
      this.linked,
    );
    // the person's own words with each panic press ("he has a knife"): plain text, never HTML
    const panicTitle = el('h5', 'card__sub', 'In their words (panic button)');
    panicTitle.id = `incident-${incident.id}-panic-notes`;
    this.panicSection.setAttribute('aria-labelledby', panicTitle.id);
    this.panicSection.append(panicTitle, this.panicList);
    this.trail = new TrailView(`incident-${incident.id}-trail`);
    this.error.setAttribute('role', 'alert');

    for (const b of [this.ackBtn, this.resolveBtn, this.timersBtn, this.cancelBtn]) b.type = 'button';
    this.ackBtn.addEventListener('click', () => actions.ack(this.incident.id));
    this.resolveBtn.addEventListener('click', () => actions.resolve(this.incident.id));
    this.timersBtn.addEventListener('click', () => actions.timers(this.incident.userId));
    this.cancelBtn.addEventListener('click', () => actions.cancelPending(this.incident.id));
    this.cancelBtn.hidden = true;
    this.contacts.addEventListener('click', (e) => {
      const b = e.target instanceof Element ? e.target.closest('button.delivery__resend') : null;
      if (b instanceof HTMLButtonElement && b.dataset.key) actions.resend(this.incident.id, b.dataset.key);
    });
    const buttons = el('div', 'card__actions');
    buttons.append(this.ackBtn, this.resolveBtn, this.cancelBtn, this.timersBtn);

    // notes: plain text, shown to moderators only
    const noteId = `incident-${incident.id}-note`;
    this.noteText.id = noteId;
    this.noteText.rows = 2;
    this.noteText.maxLength = 2000;
    this.noteBtn.type = 'submit';
    const noteLabel = el('label', 'sr-only', 'Note');
    noteLabel.htmlFor = noteId;
    this.noteForm.append(noteLabel, this.noteText, this.noteBtn);
    this.noteForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const text = this.noteText.value;
      if (text.trim()) actions.addNote(this.incident.id, text);
    });
    this.setNotes([]);

    this.root.append(
      head,
      overdue,
      facts,
      this.panicSection,
      this.ackLine,
      this.trail.root,
      el('h5', 'card__sub', 'Emergency contacts'),
      this.contacts,
      el('h5', 'card__sub', 'Notes'),
      this.notes,
      this.noteForm,
      this.error,
      buttons,
    );
    this.update(incident);
  }

  /** Label a button with visible text plus the person's name for screen readers. */
  private label(b: HTMLButtonElement, text: string): void {
    b.replaceChildren(text, el('span', 'sr-only', ` — ${who(this.incident)}`));
  }

  update(i: Incident): void {
    this.incident = i;
    const acked = i.status === 'acknowledged';
    this.root.classList.toggle('card--active', i.status === 'active');
    this.root.classList.toggle('card--acked', acked);
    if (i.status !== 'active') this.root.classList.remove('card--new');

    this.title.replaceChildren(who(i));
    if (i.displayName && i.displayName !== i.userId) this.title.append(' ', el('span', 'card__uid', i.userId));
    this.badge.className = `badge badge--${i.status}`;
    this.badge.textContent = acked ? 'Acknowledged' : i.status === 'active' ? 'Active SOS' : i.status;

    const sources = i.sources ?? [i.source ?? 'timer'];
    this.source.dataset.source = sources[0] ?? 'timer';
    this.source.textContent = sources.map((s) => SOURCE_LABEL[s]).join(' + ');
    this.root.classList.toggle('card--panic', sources.includes('panic') || sources.includes('duress'));
    this.at.textContent = sources[0] !== 'timer' ? `(raised ${clockTime(i.deadline)})` : `(deadline ${clockTime(i.deadline)})`;
    this.place.textContent = i.locationName ?? 'No place given';
    this.place.classList.toggle('muted', !i.locationName);
    if (i.location) {
      const a = el('a', undefined, `${i.location.lat.toFixed(5)}, ${i.location.lng.toFixed(5)}`);
      a.href = mapUrl(i.location.lat, i.location.lng);
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      a.append(el('span', 'sr-only', ' (map, opens in a new tab)'));
      this.map.replaceChildren(a);
      this.map.classList.remove('muted');
    } else {
      this.map.replaceChildren('No coordinates');
      this.map.classList.add('muted');
    }
    const m = i.meeting;
    const meetingText = m ? [m.name, m.phone, m.withUserId ? `user ${m.withUserId}` : undefined].filter(Boolean).join(' · ') : '';
    this.meeting.textContent = meetingText;
    this.meeting.hidden = !meetingText;
    this.meetingTerm.hidden = !meetingText;
    this.setLinked(i.linkedTimerIds ?? []);
    this.setPanicNotes(i.panicNotes ?? []);
    this.ackLine.textContent = acked ? `Acknowledged by ${i.acknowledgedBy ?? 'a moderator'} at ${clockTime(i.acknowledgedAt)}` : '';
    this.ackLine.hidden = !acked;

    this.ackBtn.hidden = i.status !== 'active';
    this.label(this.ackBtn, 'Acknowledge');
    this.label(this.resolveBtn, 'Resolve');
    this.label(this.timersBtn, 'Their timers');
    this.label(this.cancelBtn, 'Cancel pending texts');
    this.label(this.noteBtn, 'Add note');
    this.tick(serverNow());
  }

  /** Later timers that joined this open SOS (one open SOS per person): each can check in and post fixes. */
  private setLinked(ids: string[]): void {
    const n = ids.length;
    this.linkedTerm.hidden = n === 0;
    this.linked.hidden = n === 0;
    this.linked.dataset.count = String(n);
    this.linked.replaceChildren();
    if (n === 0) return;
    this.linked.append(`${n} timer${n === 1 ? '' : 's'} linked (`);
    ids.forEach((id, k) => {
      const code = el('code', 'card__timer-id', shortId(id));
      code.title = id;
      if (k > 0) this.linked.append(', ');
      this.linked.append(code);
    });
    this.linked.append(')');
  }

  /** The person's notes with each panic press, oldest first, each with its time: text, never HTML. */
  private setPanicNotes(list: PanicNote[]): void {
    this.panicSection.hidden = list.length === 0;
    const sorted = [...list].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
    this.panicList.replaceChildren(
      ...sorted.map((n) => {
        const li = el('li', 'panic-note');
        const when = el('time', 'panic-note__time muted', clockTime(n.at));
        when.dateTime = n.at;
        li.append(when, el('p', 'panic-note__text', n.text));
        return li;
      }),
    );
  }

  /** The whole trail (REST), or one more fix (`location.updated`). */
  setTrail(fixes: Fix[]): void {
    this.trail.set(fixes);
  }

  addFix(fix: Fix): void {
    this.trail.add(fix);
  }

  markNew(): void {
    this.root.classList.add('card--new');
  }

  setBusy(busy: boolean, which: 'ack' | 'resolve' | 'cancel' | 'note'): void {
    const b = { ack: this.ackBtn, resolve: this.resolveBtn, cancel: this.cancelBtn, note: this.noteBtn }[which];
    b.disabled = busy;
    b.setAttribute('aria-busy', String(busy));
    if (busy) this.setError('');
  }

  setError(text: string): void {
    this.error.textContent = text;
  }

  /** Notes oldest first; a note's text is shown as text, never as HTML. */
  setNotes(list: Note[]): void {
    if (list.length === 0) {
      this.notes.replaceChildren(el('li', 'muted', 'No notes yet.'));
      return;
    }
    const sorted = [...list].sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt));
    this.notes.replaceChildren(
      ...sorted.map((n) => {
        const li = el('li', 'note');
        li.dataset.noteId = n.id;
        li.append(el('span', 'note__meta muted', `${n.author} · ${clockTime(n.createdAt)}`), el('p', 'note__text', n.text || '(removed)'));
        return li;
      }),
    );
  }

  /** After a note was saved: empty the field. */
  noteSaved(): void {
    this.noteText.value = '';
  }

  setDeliveries(list: Delivery[] | undefined): void {
    // only a pending text can be cancelled (one being sent right now is the dispatcher's)
    this.cancelBtn.hidden = !list?.some((d) => d.status === 'pending');
    this.contacts.replaceChildren(...deliveryRows(list));
  }

  tick(nowMs: number): void {
    const late = nowMs - Date.parse(this.incident.deadline);
    this.ago.textContent = late >= 0 ? `Deadline passed ${duration(late)} ago` : `Deadline in ${duration(-late)}`;
  }

  get status(): Incident['status'] {
    return this.incident.status;
  }

  get deadlineMs(): number {
    return Date.parse(this.incident.deadline);
  }
}
