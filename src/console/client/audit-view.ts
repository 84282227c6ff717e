/**
 * The audit: what moderators did and read, newest first, filtered by moderator, person and
 * incident (all optional), one page at a time ("Older lines" follows the cursor). Every text
 * shown is set as text, never as HTML: a reason is what a moderator typed.
 */
import { ApiError, type Api } from './api.js';
import { clockTime, el } from './format.js';
import type { AuditLine } from './types.js';

export interface AuditElements {
  form: HTMLFormElement;
  actor: HTMLInputElement;
  person: HTMLInputElement;
  incident: HTMLInputElement;
  message: HTMLElement;
  table: HTMLTableElement;
  body: HTMLTableSectionElement;
  more: HTMLButtonElement;
}

/** What each action reads as. */
const ACTION_TEXT: Record<string, string> = {
  'delivery.resend': 'resent a text',
  'delivery.cancel': 'cancelled a text',
  'incident.note': 'added a note',
  'user.revoke_tokens': 'revoked tokens',
  'incident.acknowledge': 'acknowledged',
  'incident.resolve': 'resolved',
  'escalation.retry': 'retried an escalation',
  'incident.read': 'read the incident',
  'trail.read': 'read the trail',
  'timers.read': 'read the timers',
};

type Filter = { actor?: string; person?: string; incident?: string };

export class AuditView {
  private filter: Filter = {};
  private cursor: string | undefined;
  private seq = 0;

  constructor(
    private readonly els: AuditElements,
    private readonly api: () => Api | undefined,
  ) {
    els.form.addEventListener('submit', (e) => {
      e.preventDefault();
      const v = (i: HTMLInputElement) => i.value.trim() || undefined;
      void this.show({ actor: v(els.actor), person: v(els.person), incident: v(els.incident) });
    });
    els.more.addEventListener('click', () => void this.page(true));
  }

  /** The first page for `filter`. */
  async show(filter: Filter): Promise<void> {
    this.filter = filter;
    this.cursor = undefined;
    this.els.body.replaceChildren();
    await this.page(false);
  }

  private async page(older: boolean): Promise<void> {
    const api = this.api();
    if (!api) return;
    const seq = ++this.seq;
    this.els.message.textContent = 'Loading the audit…';
    this.els.more.hidden = true;
    try {
      const { lines, cursor } = await api.audit(this.filter, older ? this.cursor : undefined);
      if (seq !== this.seq) return; // a newer request superseded this one
      this.cursor = cursor;
      this.els.body.append(...lines.map((l) => this.row(l)));
      const shown = this.els.body.rows.length;
      this.els.table.hidden = shown === 0;
      this.els.more.hidden = cursor === undefined;
      this.els.message.textContent = shown === 0 ? 'No audit lines match.' : `${shown} line${shown === 1 ? '' : 's'}, newest first.`;
    } catch (err) {
      if (seq !== this.seq) return;
      this.els.message.textContent = err instanceof ApiError ? `Could not read the audit: ${err.message}` : 'Could not read the audit.';
    }
  }

  private row(l: AuditLine): HTMLTableRowElement {
    const tr = el('tr', 'audit__line');
    tr.dataset.action = l.action;
    tr.dataset.lineId = l.id;
    const at = el('td', undefined, clockTime(l.at));
    at.title = l.at;
    tr.append(
      at,
      el('td', undefined, l.actor),
      el('td', undefined, ACTION_TEXT[l.action] ?? l.action),
      el('td', l.person ? undefined : 'muted', l.person ?? '—'),
      el('td', l.incidentId ? undefined : 'muted', l.incidentId ?? '—'),
      el('td', l.reason ? undefined : 'muted', l.reason ?? '—'),
    );
    return tr;
  }

  clear(): void {
    this.seq++;
    this.filter = {};
    this.cursor = undefined;
    for (const i of [this.els.actor, this.els.person, this.els.incident]) i.value = '';
    this.els.body.replaceChildren();
    this.els.table.hidden = true;
    this.els.more.hidden = true;
    this.els.message.textContent = '';
  }
}
