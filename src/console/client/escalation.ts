/**
 * The cue that escalates while an SOS waits for a moderator: once an active incident is older
 * than PAGE_UNACKNOWLEDGED_AFTER_SECONDS (the server's setting, read from ./settings.json), the
 * tab title flashes, the card is marked, the page beeps again every REPEAT_MS (unless muted),
 * and, when the moderator allowed it, one desktop notification per incident (the Notification
 * API; it reaches a moderator whose console tab is in the background). Acknowledging ends it.
 */
import type { Alarm } from './cue.js';

/** How often the beep repeats while an incident stays unacknowledged. */
export const REPEAT_MS = 15_000;
/** The server's default, used until (or when) ./settings.json cannot be read. */
export const DEFAULT_PAGE_AFTER_SECONDS = 60;

export interface Waiting {
  id: string;
  createdAt: string;
  who: string;
}

/** Ask for the Notification permission: only from a user gesture (sign-in), only when not decided yet. */
export function askToNotify(): void {
  if (!('Notification' in window) || Notification.permission !== 'default') return;
  void Notification.requestPermission().catch(() => undefined);
}

/** PAGE_UNACKNOWLEDGED_AFTER_SECONDS as the server has it. */
export async function readPageAfterSeconds(): Promise<number> {
  try {
    const res = await fetch('settings.json', { cache: 'no-store' });
    const body = (await res.json()) as { pageUnacknowledgedAfterSeconds?: unknown };
    const s = body.pageUnacknowledgedAfterSeconds;
    return typeof s === 'number' && s > 0 ? s : DEFAULT_PAGE_AFTER_SECONDS;
  } catch {
    return DEFAULT_PAGE_AFTER_SECONDS;
  }
}

export class Escalation {
  pageAfterMs = DEFAULT_PAGE_AFTER_SECONDS * 1000;
  private readonly notified = new Set<string>();
  private readonly marked = new Set<string>();
  private lastBeep = Number.NEGATIVE_INFINITY;
  private flash = false;

  constructor(
    private readonly alarm: Alarm,
    private readonly mark: (id: string, overdue: boolean) => void,
  ) {}

  /**
   * Every second, with the active (unacknowledged) incidents and the server's clock. Sets the
   * title (flashing while any is overdue) and `data-unacknowledged` on <body>; answers how
   * many are overdue.
   */
  tick(active: readonly Waiting[], nowMs: number, baseTitle: string): number {
    const overdue = active.filter((i) => nowMs - Date.parse(i.createdAt) >= this.pageAfterMs);
    const overdueIds = new Set(overdue.map((i) => i.id));
    // unmark those no longer overdue (acknowledged, closed), mark the overdue ones
    for (const id of [...this.marked]) {
      if (overdueIds.has(id)) continue;
      this.marked.delete(id);
      this.mark(id, false);
    }
    for (const id of overdueIds) {
      this.marked.add(id);
      this.mark(id, true);
    }
    // a notification per incident, once; forget those that left (acknowledged, closed)
    for (const id of [...this.notified]) if (!overdueIds.has(id)) this.notified.delete(id);
    for (const i of overdue) if (!this.notified.has(i.id)) this.notify(i, nowMs);
    if (overdue.length === 0) {
      delete document.body.dataset.unacknowledged;
      this.flash = false;
      this.lastBeep = Number.NEGATIVE_INFINITY;
      document.title = baseTitle;
      return 0;
    }
    document.body.dataset.unacknowledged = String(overdue.length);
    this.flash = !this.flash;
    document.title = this.flash ? `⚠ ${String(overdue.length)} UNACKNOWLEDGED SOS · Vigil console` : baseTitle;
    if (nowMs - this.lastBeep >= REPEAT_MS) {
      this.lastBeep = nowMs;
      this.alarm.beep();
    }
    return overdue.length;
  }

  /** Forget everything (sign-out). */
  reset(): void {
    this.notified.clear();
    this.marked.clear();
    this.lastBeep = Number.NEGATIVE_INFINITY;
    this.flash = false;
    delete document.body.dataset.unacknowledged;
  }

  private notify(i: Waiting, nowMs: number): void {
    this.notified.add(i.id);
    if (!('Notification' in window) || Notification.permission !== 'granted') return;
    const waited = Math.round((nowMs - Date.parse(i.createdAt)) / 1000);
    try {
      const n = new Notification('Unacknowledged SOS', {
        body: `${i.who} has waited ${String(waited)} s for a moderator. Open the Vigil console and acknowledge.`,
        tag: `vigil-sos-${i.id}`,
        requireInteraction: true,
      });
      n.addEventListener('click', () => window.focus());
    } catch {
      // a browser that only notifies from a service worker: the title and sound remain
    }
  }
}
