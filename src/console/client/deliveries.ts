/**
 * The texts of an incident as rows of its card: one row per text (SOS, follow-up,
 * all-clear) with its status and, for one never sent, why (a cap held it back, a
 * moderator cancelled it, the SOS ended first). Text only, never HTML.
 */
import { el } from './format.js';
import type { Delivery, DeliveryStatus } from './types.js';

const CANCELLED_BY_MODERATOR = 'cancelled_by_moderator';
const HELD_PREFIX = 'held_';

/** Why a cap held a follow-up back (`lastError` `held_<reason>`, never sent). */
const HELD_REASON = new Map([
  ['held_per_day', 'daily SMS cap'],
  ['held_per_incident', 'incident SMS cap'],
]);

const SOS_ENDED = 'not sent (SOS ended)';
const SOS_NOT_SENT = 'not sent (the SOS never reached this contact)';

/** Why a text was superseded (its `lastError`), in the moderator's words. */
const NOT_SENT_REASON = new Map([
  [CANCELLED_BY_MODERATOR, 'cancelled by a moderator'],
  ['incident_closed', SOS_ENDED],
  ['incident_closed_or_sos_not_sent', 'not sent (SOS ended, or the SOS never reached this contact)'],
  ['sos_not_sent', SOS_NOT_SENT],
]);

const STATUS_LABEL: Record<DeliveryStatus, string> = {
  pending: 'pending',
  sending: 'pending',
  sent: 'sent',
  delivered: 'delivered',
  failed: 'failed',
  dead: 'dead',
  superseded: 'not sent',
};

// a status or kind added on the server before this page was reloaded still reads as itself
const statusLabel = (s: string): string => (STATUS_LABEL as Record<string, string | undefined>)[s] ?? s;
const statusClass = (s: string): string => statusLabel(s).replace(/[^a-z]+/g, '-');
const KIND_ORDER: Record<string, number | undefined> = { sos: 0, moved: 1, all_clear: 2 };
const kindRank = (k: string): number => KIND_ORDER[k] ?? 3;

const isHeld = (d: Delivery): boolean => d.status === 'superseded' && (d.lastError?.startsWith(HELD_PREFIX) ?? false);

/** What a superseded text's row says: held back by a cap, or not sent and why. */
function notSentNote(d: Delivery): string {
  const e = d.lastError ?? '';
  if (isHeld(d)) return `held back: ${HELD_REASON.get(e) ?? e.slice(HELD_PREFIX.length).replace(/_/g, ' ')}`;
  // no reason recorded (or an earlier attempt's error): superseded when the SOS ended (I'm safe, a resolve)
  return NOT_SENT_REASON.get(e) ?? (d.kind === 'all_clear' ? SOS_NOT_SENT : SOS_ENDED);
}

/** A `lastError` the row already explains in words: not shown raw as well. */
const explained = (e: string): boolean => e.startsWith(HELD_PREFIX) || NOT_SENT_REASON.has(e);

function row(d: Delivery): HTMLLIElement {
  const li = el('li', 'delivery');
  li.dataset.key = d.key;
  const name = el('span', 'delivery__name', d.contactName);
  const phone = d.phone.includes('*') ? el('span', 'delivery__phone', d.phone) : el('a', 'delivery__phone', d.phone);
  if (phone instanceof HTMLAnchorElement) phone.href = `tel:${d.phone}`;
  const held = isHeld(d);
  const status = held
    ? el('span', 'badge badge--held', 'held back')
    : el('span', `badge badge--${statusClass(d.status)}`, statusLabel(d.status));
  status.dataset.status = d.status;
  if (held && d.lastError) li.dataset.held = d.lastError;
  const notes: string[] = [];
  if (d.kind === 'all_clear') notes.push('all-clear message');
  if (d.kind === 'moved') notes.push('follow-up: the person moved');
  if (d.status === 'sending') notes.push('sending now');
  if (d.status === 'superseded') notes.push(notSentNote(d));
  if (d.resends) notes.push(`resent ${d.resends === 1 ? 'once' : `${d.resends} times`}`);
  if (d.attempts > 0) notes.push(`${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`);
  if (d.carrier) notes.push(d.carrier);
  if (d.lastError && d.status !== 'sent' && d.status !== 'delivered' && !explained(d.lastError)) notes.push(d.lastError);
  li.append(name, phone, status);
  if (notes.length) li.append(el('span', 'delivery__note muted', notes.join(' · ')));
  if (d.status === 'dead' || d.status === 'failed') {
    const resend = el('button', 'btn btn--small delivery__resend', 'Resend');
    resend.type = 'button';
    resend.dataset.key = d.key;
    resend.append(el('span', 'sr-only', ` — text to ${d.contactName}`));
    li.append(resend);
  }
  return li;
}

/**
 * The rows of an incident's texts (`undefined`: not read yet). Every contact of an SOS has a
 * text on the incident, even one held back or never sent: only an incident with no text at
 * all means the person had nobody on file.
 */
export function deliveryRows(list: Delivery[] | undefined): HTMLLIElement[] {
  if (!list) return [el('li', 'muted', 'Loading contacts…')];
  if (list.length === 0) return [el('li', 'muted', 'No emergency contacts on file.')];
  const sorted = [...list].sort((a, b) => kindRank(a.kind) - kindRank(b.kind) || a.contactName.localeCompare(b.contactName));
  return sorted.map(row);
}
