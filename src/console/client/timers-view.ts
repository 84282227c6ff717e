/** Support's question "is her timer still running?": a person's timers with a ticking time left. */
import { ApiError, type Api } from './api.js';
import { serverNow } from './clock.js';
import { clockTime, duration, el } from './format.js';
import { isLiveTimer, type Timer } from './types.js';

export interface TimersElements {
  form: HTMLFormElement;
  input: HTMLInputElement;
  /** why the moderator looks: required by the server while the person has no open incident */
  reason: HTMLInputElement;
  message: HTMLElement;
  table: HTMLTableElement;
  caption: HTMLElement;
  body: HTMLTableSectionElement;
}

const STATUS_TEXT: Record<Timer['status'], string> = {
  active: 'running',
  extended: 'running (extended)',
  safe: 'checked in safe',
  cancelled: 'cancelled',
  expired: 'expired · SOS',
};

export class TimersView {
  private userId: string | undefined;
  /** the reason the person on screen was read with: a refresh reads them again with it */
  private reason: string | undefined;
  private timers: Timer[] = [];
  private readonly left = new Map<string, HTMLElement>();
  private seq = 0;

  constructor(
    private readonly els: TimersElements,
    private readonly api: () => Api | undefined,
  ) {
    els.form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.show(els.input.value.trim(), els.reason.value.trim() || undefined);
    });
  }

  get current(): string | undefined {
    return this.userId;
  }

  /** Show `userId`'s timers; from a card (an open incident) no reason is needed. */
  async show(userId: string, reason?: string): Promise<void> {
    const api = this.api();
    if (!api) return;
    if (!userId) {
      this.els.message.textContent = 'Enter a user id.';
      this.els.input.focus();
      return;
    }
    this.els.input.value = userId;
    this.userId = userId;
    this.reason = reason;
    const seq = ++this.seq;
    this.els.message.textContent = `Loading timers of ${userId}…`;
    try {
      const timers = await api.timers(userId, reason);
      if (seq !== this.seq) return; // a newer request superseded this one
      this.timers = timers;
      this.render();
      this.els.message.textContent = timers.length
        ? `${timers.length} timer${timers.length === 1 ? '' : 's'} of ${userId}, newest first (read at ${clockTime(new Date().toISOString())}).`
        : `${userId} has no timers.`;
    } catch (err) {
      if (seq !== this.seq) return;
      this.timers = [];
      this.render();
      if (err instanceof ApiError && err.code === 'reason_required') {
        this.els.message.textContent = `${userId} has no open SOS: say why you look in Reason (it is recorded in the audit), then show the timers again.`;
        this.els.reason.focus();
        return;
      }
      this.els.message.textContent = err instanceof ApiError ? `Could not read the timers: ${err.message}` : 'Could not read the timers.';
    }
  }

  /** Re-read if `userId` is the person on screen (their timer or incident changed). */
  refreshIf(userId: string): void {
    if (userId === this.userId) void this.show(userId, this.reason);
  }

  clear(): void {
    this.userId = undefined;
    this.reason = undefined;
    this.timers = [];
    this.els.input.value = '';
    this.els.reason.value = '';
    this.els.message.textContent = '';
    this.render();
  }

  private render(): void {
    this.left.clear();
    this.els.table.hidden = this.timers.length === 0;
    this.els.caption.textContent = this.userId ? `Timers of ${this.userId}` : '';
    this.els.body.replaceChildren(
      ...this.timers.map((t) => {
        const tr = el('tr', `timer timer--${t.status}`);
        tr.dataset.timerId = t.id;
        const status = el('td');
        status.append(el('span', `badge badge--timer-${t.status}`, STATUS_TEXT[t.status]));
        const left = el('td', 'timer__left');
        if (isLiveTimer(t.status)) this.left.set(t.id, left);
        else left.textContent = t.status === 'expired' ? 'none' : `ended ${clockTime(t.resolvedAt ?? t.updatedAt)}`;
        const place = el('td', t.locationName ? undefined : 'muted', t.locationName ?? '—');
        tr.append(status, left, place, el('td', undefined, clockTime(t.expiresAt)));
        return tr;
      }),
    );
    this.tick();
  }

  tick(): void {
    const now = serverNow();
    for (const t of this.timers) {
      const cell = this.left.get(t.id);
      if (!cell) continue;
      const ms = Date.parse(t.expiresAt) - now;
      cell.textContent = ms > 0 ? `${duration(ms)} left` : `overdue by ${duration(-ms)} — escalating`;
      cell.classList.toggle('timer__left--overdue', ms <= 0);
    }
  }
}
