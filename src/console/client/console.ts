/**
 * The moderator console: sign-in, the live SOS board, the timers view, the audit. Plain DOM, no
 * framework. The token lives in sessionStorage (this tab only); a token without the
 * moderator role is refused before any socket is opened, and the API confirms the
 * role (403) before the page goes live.
 */
import { Api, ApiError } from './api.js';
import { Board } from './board.js';
import { serverNow } from './clock.js';
import { Alarm, setTitleCount, titleFor } from './cue.js';
import { askToNotify, Escalation, readPageAfterSeconds } from './escalation.js';
import { Live, type ConnState } from './live.js';
import { checkModeratorToken, type Claims } from './token.js';
import { TimersView } from './timers-view.js';
import { AuditView } from './audit-view.js';
import { field, isDelivery, isFix, isIncident, isNote, isTimer, type Incident } from './types.js';

const TOKEN_KEY = 'vigil.console.token';

function $<T extends HTMLElement>(id: string, type: new () => T): T {
  const e = document.getElementById(id);
  if (!(e instanceof type)) throw new Error(`the page has no #${id}`);
  return e;
}

const ui = {
  signin: $('signin', HTMLElement),
  form: $('signin-form', HTMLFormElement),
  token: $('token', HTMLTextAreaElement),
  signinError: $('signin-error', HTMLElement),
  signinSubmit: $('signin-submit', HTMLButtonElement),
  app: $('app', HTMLElement),
  tools: $('tools', HTMLElement),
  conn: $('conn', HTMLElement),
  connText: $('conn-text', HTMLElement),
  who: $('who', HTMLElement),
  mute: $('mute', HTMLButtonElement),
  signout: $('signout', HTMLButtonElement),
  boardTitle: $('board-title', HTMLElement),
  boardError: $('board-error', HTMLElement),
  summary: $('summary', HTMLElement),
  announceSos: $('announce-sos', HTMLElement),
  announce: $('announce', HTMLElement),
};

let api: Api | undefined;
let live: Live | undefined;
let reloading: Promise<void> | undefined;
let reloadAgain = false;
const alarm = new Alarm(sessionStorage);

/** Speak through a live region; clearing first makes a repeated text be announced again. */
function say(region: HTMLElement, text: string): void {
  region.textContent = '';
  setTimeout(() => (region.textContent = text), 50);
}

const whoOf = (i: Incident) => i.displayName ?? i.userId;

const board = new Board(
  {
    active: $('lane-active', HTMLOListElement),
    acked: $('lane-acked', HTMLOListElement),
    countActive: $('count-active', HTMLElement),
    countAcked: $('count-acked', HTMLElement),
    emptyActive: $('empty-active', HTMLElement),
    emptyAcked: $('empty-acked', HTMLElement),
  },
  {
    ack: (id) => void command(id, 'ack'),
    resolve: (id) => void command(id, 'resolve'),
    timers: (userId) => {
      void timersView.show(userId);
      $('timers-title', HTMLElement).focus();
    },
    resend: (incidentId, key) => void resend(incidentId, key),
    cancelPending: (id) => void cancelPending(id),
    addNote: (id, text) => void addNote(id, text),
  },
);

const escalation = new Escalation(alarm, (id, overdue) => board.card(id)?.root.classList.toggle('card--overdue', overdue));

const timersView = new TimersView(
  {
    form: $('timers-form', HTMLFormElement),
    input: $('timers-user', HTMLInputElement),
    reason: $('timers-reason', HTMLInputElement),
    message: $('timers-msg', HTMLElement),
    table: $('timers-table', HTMLTableElement),
    caption: $('timers-caption', HTMLElement),
    body: $('timers-body', HTMLTableSectionElement),
  },
  () => api,
);

const auditView = new AuditView(
  {
    form: $('audit-form', HTMLFormElement),
    actor: $('audit-actor', HTMLInputElement),
    person: $('audit-person', HTMLInputElement),
    incident: $('audit-incident', HTMLInputElement),
    message: $('audit-msg', HTMLElement),
    table: $('audit-table', HTMLTableElement),
    body: $('audit-body', HTMLTableSectionElement),
    more: $('audit-more', HTMLButtonElement),
  },
  () => api,
);

function updateTitle(): void {
  setTitleCount(board.activeCount);
}

/** A new SOS: highlight the card, count it in the title, beep, announce. */
function cueNew(i: Incident): void {
  board.card(i.id)?.markNew();
  alarm.beep();
  const place = i.locationName ? ` at ${i.locationName}` : '';
  say(ui.announceSos, `New SOS: ${whoOf(i)}${place}. Deadline passed ${new Date(i.deadline).toLocaleTimeString()}.`);
}

function setConn(state: ConnState, detail: string): void {
  ui.conn.className = `conn conn--${state}`;
  ui.conn.dataset.state = state;
  ui.connText.textContent = detail;
}

/** A 401 after sign-in: the token expired or the secret changed. Back to sign-in. */
function signedOut(err: unknown): boolean {
  if (!(err instanceof ApiError) || err.status !== 401) return false;
  showSignin(`Signed out: the server no longer accepts this token (${err.message}). Paste a fresh one.`);
  return true;
}

async function command(id: string, what: 'ack' | 'resolve'): Promise<void> {
  const card = board.card(id);
  if (!api || !card) return;
  const hadFocus = card.root.contains(document.activeElement);
  card.setBusy(true, what);
  try {
    const i = await api.command(id, what);
    board.upsertFull(i);
    say(ui.announce, `${what === 'ack' ? 'Acknowledged' : 'Resolved'}: ${whoOf(i)}.`);
  } catch (err) {
    if (signedOut(err)) return;
    const message = err instanceof ApiError ? err.message : String(err);
    board.card(id)?.setError(`Could not ${what === 'ack' ? 'acknowledge' : 'resolve'}: ${message}`);
    // a conflict means someone else moved it: show the current state
    if (err instanceof ApiError && err.status === 409) await refreshIncident(id);
  } finally {
    const after = board.card(id);
    after?.setBusy(false, what);
    updateTitle();
    if (hadFocus && api) {
      if (after) (after.ackBtn.hidden ? after.resolveBtn : after.ackBtn).focus();
      else ui.boardTitle.focus();
    }
  }
}

/** Run a moderator action on a card: busy state, error line, announcement; a 409 re-reads the incident. */
async function onCard(id: string, busy: 'cancel' | 'note' | undefined, what: string, act: (a: Api) => Promise<string>): Promise<void> {
  const card = board.card(id);
  if (!api || !card) return;
  if (busy) card.setBusy(true, busy);
  card.setError('');
  try {
    say(ui.announce, await act(api));
  } catch (err) {
    if (signedOut(err)) return;
    board.card(id)?.setError(`Could not ${what}: ${err instanceof ApiError ? err.message : String(err)}`);
    if (err instanceof ApiError && err.status === 409) await refreshIncident(id);
  } finally {
    if (busy) board.card(id)?.setBusy(false, busy);
  }
}

const resend = (incidentId: string, key: string) =>
  onCard(incidentId, undefined, 'resend the text', async (a) => {
    const d = await a.resend(key);
    board.upsertDelivery(d);
    return `Text to ${d.contactName} queued again.`;
  });

const cancelPending = (id: string) =>
  onCard(id, 'cancel', 'cancel the pending texts', async (a) => {
    const i = await a.cancelPending(id);
    board.upsertFull(i);
    return `Pending texts cancelled for ${whoOf(i)}.`;
  });

// one key per note typed: a retry of the same click (a lost answer) adds it once
const noteKeys = new Map<string, string>();
const addNote = (id: string, text: string) =>
  onCard(id, 'note', 'add the note', async (a) => {
    const k = `${id}\u0000${text}`;
    const key = noteKeys.get(k) ?? `console-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    noteKeys.set(k, key);
    const n = await a.addNote(id, text, key);
    noteKeys.delete(k);
    board.upsertNote(n);
    board.card(id)?.noteSaved();
    return 'Note added.';
  });

async function refreshIncident(id: string): Promise<void> {
  if (!api) return;
  try {
    board.upsertFull(await api.incident(id));
  } catch (err) {
    signedOut(err); // otherwise the next reload repairs it
  }
  updateTitle();
  await loadTrail(id);
}

/** The incident's location trail (REST); `location.updated` events add to it afterwards. */
async function loadTrail(id: string): Promise<void> {
  if (!api || !board.card(id)) return;
  try {
    const fixes = await api.trail(id);
    board.card(id)?.setTrail(fixes);
  } catch (err) {
    signedOut(err); // otherwise the next reload reads it again
  }
}

/** The trails of many cards in one request (a reload): one request per card would spend the moderator's budget. */
async function loadTrails(ids: string[]): Promise<void> {
  if (!api || ids.length === 0) return;
  try {
    const trails = await api.trails(ids);
    for (const [id, fixes] of trails) board.card(id)?.setTrail(fixes);
  } catch (err) {
    signedOut(err); // otherwise the next reload reads them again
  }
}

/** Full REST read of the open incidents: at sign-in and after every (re)connect. */
function reload(cue: boolean): Promise<void> {
  // a read already in flight may have started before a reconnect: read once more after it
  if (reloading) {
    reloadAgain = true;
    return reloading;
  }
  reloading = (async () => {
    if (!api) return;
    try {
      const { incidents, cursorMs } = await api.openIncidents();
      const revealed = board.replaceAll(incidents, cursorMs);
      void loadTrails(incidents.map((i) => i.id));
      if (cue) for (const i of revealed.filter((x) => x.status === 'active')) cueNew(i);
      ui.boardError.textContent = '';
      ui.summary.textContent = `Board read at ${new Date().toLocaleTimeString()}`;
    } catch (err) {
      if (signedOut(err)) return;
      ui.boardError.textContent = `Could not read the incidents: ${err instanceof ApiError ? err.message : String(err)}`;
    } finally {
      updateTitle();
      reloading = undefined;
      if (reloadAgain && api) {
        reloadAgain = false;
        void reload(cue);
      }
    }
  })();
  return reloading;
}

function onEvent(name: string, payload: unknown): void {
  if (name === 'delivery.updated') {
    const d = field(payload, 'delivery', isDelivery);
    if (d) board.upsertDelivery(d);
    return;
  }
  if (name === 'location.updated') {
    const fix = field(payload, 'fix', isFix);
    const incidentId = field(payload, 'incidentId', (x): x is string => typeof x === 'string');
    if (fix && incidentId) board.card(incidentId)?.addFix(fix);
    return;
  }
  if (name === 'timer.expired') {
    const t = field(payload, 'timer', isTimer);
    if (!t) return;
    timersView.refreshIf(t.userId);
    // a later timer that joined an SOS on the board (a panic press took it over): the
    // incident changed (linked timers, perhaps a new panic note) but no incident event says so
    const open = t.incidentId ? board.incident(t.incidentId) : undefined;
    if (open && open.timerId !== t.id && !open.linkedTimerIds?.includes(t.id)) void refreshIncident(open.id);
    return;
  }
  const i = field(payload, 'incident', isIncident);
  if (!i) return;
  const note = field(payload, 'note', isNote);
  if (note) board.upsertNote(note);
  const change = board.upsert(i);
  if (name === 'sos.triggered' && change === 'new') {
    if (i.status === 'active') cueNew(i);
    void refreshIncident(i.id); // its contacts (REST has the ones not tried yet, with full numbers)
  } else if (change === 'updated' && i.status === 'acknowledged') {
    say(ui.announce, `${whoOf(i)} was acknowledged by ${i.acknowledgedBy ?? 'a moderator'}.`);
  } else if (change === 'closed') {
    say(ui.announce, `${whoOf(i)}: incident ${i.status === 'false_alarm' ? 'closed as a false alarm' : 'resolved'}.`);
  } else if (change === 'new') {
    void refreshIncident(i.id);
  }
  timersView.refreshIf(i.userId);
  updateTitle();
}

/** Back to the sign-in form. `keep`: a token worth retrying (Vigil was unreachable), left in the form. */
function showSignin(message: string, keep?: string): void {
  live?.close();
  live = undefined;
  api = undefined;
  reloadAgain = false;
  if (keep) ui.token.value = keep;
  else sessionStorage.removeItem(TOKEN_KEY);
  board.clear();
  timersView.clear();
  auditView.clear();
  escalation.reset();
  updateTitle();
  ui.app.hidden = true;
  ui.tools.hidden = true;
  ui.signin.hidden = false;
  ui.signinError.textContent = message;
  ui.signinSubmit.disabled = false;
  ui.token.focus();
}

async function signIn(raw: string, fromForm: boolean): Promise<void> {
  const check = checkModeratorToken(raw, Date.now());
  if (!check.ok) {
    showSignin(check.reason);
    return;
  }
  ui.signinSubmit.disabled = true;
  ui.signinError.textContent = '';
  const candidate = new Api(check.token);
  try {
    // the server has the last word on the role: 403 here means "not a moderator"
    const { incidents, cursorMs } = await candidate.openIncidents();
    board.replaceAll(incidents, cursorMs);
  } catch (err) {
    if (err instanceof ApiError && err.status === 403)
      showSignin('The server says this token is not a moderator’s (403). The console needs a token with role "admin".');
    else if (err instanceof ApiError && err.status === 401) showSignin(`The server refused this token: ${err.message}.`);
    else if (err instanceof ApiError && err.status === 0) showSignin(`${err.message} Try again in a moment.`, check.token);
    else showSignin(err instanceof ApiError ? err.message : String(err));
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, check.token);
  api = candidate;
  goLive(check.token, check.claims);
  if (fromForm) ui.boardTitle.focus();
}

function goLive(token: string, claims: Claims): void {
  ui.token.value = '';
  ui.signin.hidden = true;
  ui.app.hidden = false;
  ui.tools.hidden = false;
  ui.who.textContent = `Signed in as ${claims.name ?? claims.sub}`;
  updateTitle();
  live = new Live({
    state: setConn,
    ready: () => void reload(true),
    refused: (message) => showSignin(message),
    event: onEvent,
  });
  live.open(token);
}

function renderMute(): void {
  ui.mute.setAttribute('aria-pressed', String(alarm.muted));
  ui.mute.textContent = alarm.muted ? 'Alerts muted' : 'Mute alerts';
}

ui.form.addEventListener('submit', (e) => {
  e.preventDefault();
  alarm.unlock(); // a user gesture: lets the page beep later
  askToNotify(); // and ask, once, to notify when an SOS stays unacknowledged
  void signIn(ui.token.value, true);
});
ui.signout.addEventListener('click', () => showSignin(''));
ui.mute.addEventListener('click', () => {
  alarm.setMuted(!alarm.muted);
  renderMute();
  say(ui.announce, alarm.muted ? 'Alert sound muted.' : 'Alert sound on.');
});

renderMute();
setInterval(() => {
  const now = serverNow();
  board.tick(now);
  timersView.tick();
  escalation.tick(
    board.active.map((i) => ({ id: i.id, createdAt: i.createdAt, who: whoOf(i) })),
    now,
    titleFor(board.activeCount),
  );
}, 1000);
void readPageAfterSeconds().then((s) => (escalation.pageAfterMs = s * 1000));

const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) void signIn(saved, false);
else ui.token.focus();
board.tick(serverNow());
