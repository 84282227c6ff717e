/**
 * What the console shows of an SOS beyond its status, in Debian's Chromium (playwright-core)
 * against a real in-process Vigil: the person's panic notes (text, never HTML, live), later
 * timers linked to the open SOS, follow-ups a cap held back and why, and the contacts list
 * (one heading; "no contacts" only for an incident with no text at all). Ticks by hand.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole, chromiumSuite, hasChromium, launchChromium, type Browser } from '../helpers/chromium.js';
import { signToken } from '../../src/auth/tokens.js';
import { loadConfig, type Config } from '../../src/config.js';
import { startVigil, type Vigil } from '../../src/main.js';
import { GENEROUS_LIMITS } from '../helpers/limits.js';

const SCREENSHOT = join('artifacts', 'console-sos.png');
const SCREENSHOT_HELD = join('artifacts', 'console-sos-held.png');

type Json = Record<string, unknown>;

describe.skipIf(!hasChromium)(chromiumSuite('an SOS on the console card'), () => {
  let dataDir: string;
  let browser: Browser;
  let config: Config;
  let vigil: Vigil;
  let context: BrowserContext;
  const problems: string[] = [];
  const token = (sub: string, o: { admin?: boolean; name?: string } = {}) => signToken(config.jwtSecret ?? '', { sub, ...o });
  const modToken = () => token('mod', { admin: true, name: 'Mona Moderator' });

  async function api(tok: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
    const res = await fetch(`${vigil.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Json };
  }

  async function newPage(): Promise<Page> {
    const page = await context.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy|Refused to/i.test(msg.text())) problems.push(`console: ${msg.text()}`);
    });
    await page.goto(`${vigil.url}/console/`);
    await page.getByLabel('Moderator token (JWT)').fill(modToken());
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    return page;
  }

  /** The page again from scratch: the token is kept for the tab, the board is read over REST. */
  async function reload(page: Page): Promise<void> {
    await page.reload();
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
  }

  const card = (page: Page, who: string) => page.locator('#lane-active li.card', { hasText: who });
  const incidentId = (r: { body: Json }) => String((r.body.incident as { id: string }).id);

  /** A timer of `seconds` for the person, left to run out; answers its id. */
  async function arm(tok: string, seconds: number): Promise<{ id: string; deadline: number }> {
    const r = await api(tok, 'POST', '/v1/timers', { durationSeconds: seconds, locationName: 'Blue Bottle Café' });
    expect(r.status).toBe(201);
    const t = r.body.timer as { id: string; expiresAt: string };
    return { id: t.id, deadline: Date.parse(t.expiresAt) };
  }

  async function resolve(id: string): Promise<void> {
    expect((await api(modToken(), 'POST', `/v1/admin/incidents/${id}/resolve`)).status).toBe(200);
  }

  beforeAll(async () => {
    buildConsole();
    dataDir = mkdtempSync(join(tmpdir(), 'vigil-console-sos-'));
    config = loadConfig({
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      TIMER_MIN_SECONDS: '1',
      LOG_LEVEL: 'silent',
      ...GENEROUS_LIMITS,
      DELIVERY_BACKOFF_BASE_MS: '60000',
    });
    vigil = await startVigil(config);
    browser = await launchChromium({ height: 1100 });
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    await vigil?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("shows the person's panic notes as text with their times, and new ones live", async () => {
    const page = await newPage();

    // a panic with a note opens an SOS: the card shows the note, as text
    const pia = token('pia', { name: 'Pia Panic' });
    expect((await api(pia, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Bob Brother', phone: '+14155550501' }] })).status).toBe(200);
    const first = 'He has a knife <b>now</b>, by the pier';
    const opened = await api(pia, 'POST', '/v1/sos', { note: first });
    expect(opened.status).toBe(201);
    const c = card(page, 'Pia Panic');
    const notes = c.locator('li.panic-note');
    await expect.poll(() => notes.locator('.panic-note__text').allTextContents()).toEqual([first]);
    expect(await c.locator('.panic-notes b').count()).toBe(0);
    const at = String((opened.body.incident as { panicNotes: { at: string }[] }).panicNotes[0]?.at);
    expect(await notes.first().locator('time').getAttribute('datetime')).toBe(at);
    expect(await notes.first().locator('time').textContent()).not.toBe('');
    expect(await c.getByRole('region', { name: 'In their words (panic button)' }).count()).toBe(1);
    expect(await c.locator('.card__linked').isHidden()).toBe(true);

    // she arms a new timer while the SOS is open and presses again: the press joins the SOS,
    // takes the timer over (linked) and adds its note; the card follows without a reload
    const t2 = await arm(pia, 3600);
    const second = 'In the car park now, blue van';
    const again = await api(pia, 'POST', '/v1/sos', { note: second });
    expect(again.status).toBe(200);
    expect(incidentId(again)).toBe(incidentId(opened));
    await expect.poll(() => notes.locator('.panic-note__text').allTextContents(), { timeout: 10_000 }).toEqual([first, second]);
    await expect.poll(() => c.locator('.card__linked').textContent()).toBe(`1 timer linked (…${t2.id.slice(-6)})`);
    expect(await c.locator('.card__linked code').getAttribute('title')).toBe(t2.id);
    expect(await page.locator('#lane-active li.card', { hasText: 'Pia Panic' }).count()).toBe(1);

    // an SOS a timer opened: a panic press with a note joins it, live through incident.updated
    const tom = token('tom', { name: 'Tom Timer' });
    expect((await api(tom, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Sue Sister', phone: '+14155550502' }] })).status).toBe(200);
    const t = await arm(tom, 1);
    await expect.poll(() => Date.now() > t.deadline, { timeout: 10_000 }).toBe(true);
    expect((await vigil.sweeper.sweep()).escalated).toBe(1);
    const tc = card(page, 'Tom Timer');
    await expect.poll(() => tc.locator('.card__source').textContent(), { timeout: 10_000 }).toBe('Timer ran out');
    expect(await tc.locator('.panic-notes').isHidden()).toBe(true);
    const joined = await api(tom, 'POST', '/v1/sos', { note: 'They locked the door' });
    expect(joined.status).toBe(200);
    await expect.poll(() => tc.locator('.card__source').textContent()).toBe('Timer ran out + Panic button');
    await expect.poll(() => tc.locator('.panic-note__text').allTextContents()).toEqual(['They locked the door']);

    mkdirSync('artifacts', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    await resolve(incidentId(opened));
    await resolve(incidentId(joined));
    await expect.poll(() => page.locator('#lane-active li.card').count()).toBe(0);
    await page.close();
  });

  it('says which follow-ups a cap held back and why; one contacts heading; "no contacts" only with no text at all', async () => {
    const page = await newPage();
    const hal = token('hal', { name: 'Hal Held' });
    const contacts = [
      { name: 'Ann Aunt', phone: '+14155550601' },
      { name: 'Ben Brother', phone: '+14155550602' },
      { name: 'Cat Cousin', phone: '+14155550603' },
    ];
    expect((await api(hal, 'PUT', '/v1/me/contacts', { contacts })).status).toBe(200);
    const t = await arm(hal, 1);
    await expect.poll(() => Date.now() > t.deadline, { timeout: 10_000 }).toBe(true);
    expect((await vigil.sweeper.sweep()).escalated).toBe(1);
    await vigil.dispatcher.tick();
    await vigil.dispatcher.drain();

    // the follow-ups a cap held back (the state the SMS budget records: superseded, never sent, why in lastError)
    const list = await api(modToken(), 'GET', '/v1/admin/incidents?status=active');
    const listed = (
      list.body.incidents as { id: string; userId: string; deliveries: { contactId: string; contactName: string; phone: string }[] }[]
    ).find((i) => i.userId === 'hal');
    if (!listed) throw new Error("Hal's incident is not listed");
    const incident = await vigil.store.getIncident(listed.id);
    if (!incident) throw new Error("Hal's incident is not in the store");
    const byName = (name: string) => {
      const d = listed.deliveries.find((x) => x.contactName === name);
      if (!d) throw new Error(`no SOS text to ${name}`);
      return d;
    };
    const held = (name: string, why: string) => {
      const d = byName(name);
      return {
        key: `${listed.id}:${d.contactId}:moved`,
        contactId: d.contactId,
        contactName: name,
        phone: d.phone,
        kind: 'moved' as const,
        body: 'x',
        held: why,
      };
    };
    await vigil.store.addDeliveries(incident, [held('Ann Aunt', 'held_per_day'), held('Ben Brother', 'held_per_incident')]);
    await reload(page);

    const c = card(page, 'Hal Held');
    const row = (who: string, kind: 'sos' | 'moved') =>
      c.locator(`li.delivery[data-key="${listed.id}:${byName(who).contactId}${kind === 'sos' ? '' : ':moved'}"]`);
    await expect.poll(() => row('Ann Aunt', 'moved').textContent(), { timeout: 10_000 }).toContain('held back: daily SMS cap');
    expect(await row('Ann Aunt', 'moved').getAttribute('data-held')).toBe('held_per_day');
    expect(await row('Ann Aunt', 'moved').locator('.badge').textContent()).toBe('held back');
    expect(await row('Ben Brother', 'moved').textContent()).toContain('held back: incident SMS cap');
    // the reason is said in words, not as the raw code
    expect(await row('Ann Aunt', 'moved').textContent()).not.toContain('held_per_day');
    // the SOS texts themselves went out: they say so
    expect(await row('Cat Cousin', 'sos').locator('.badge').getAttribute('data-status')).toBe('sent');

    // one "Emergency contacts" heading per card, and no "no contacts" line on a card with texts
    expect(await c.locator('h5', { hasText: 'Emergency contacts' }).count()).toBe(1);
    expect(await c.textContent()).not.toContain('No emergency contacts on file.');
    expect(await c.locator('li.delivery').count()).toBe(5);

    // a person with no contacts: the card says so, until the incident has a text (even one never sent)
    const nia = token('nia', { name: 'Nia Nobody' });
    const opened = await api(nia, 'POST', '/v1/sos', {});
    expect(opened.status).toBe(201);
    const nc = card(page, 'Nia Nobody');
    await expect.poll(() => nc.locator('ul.deliveries').textContent(), { timeout: 10_000 }).toBe('No emergency contacts on file.');
    expect(await nc.locator('h5', { hasText: 'Emergency contacts' }).count()).toBe(1);
    const niaIncident = await vigil.store.getIncident(incidentId(opened));
    if (!niaIncident) throw new Error("Nia's incident is not in the store");
    await vigil.store.addDeliveries(niaIncident, [
      {
        key: `${niaIncident.id}:c-late:moved`,
        contactId: 'c-late',
        contactName: 'Lee Late',
        phone: '+14155550604',
        kind: 'moved',
        body: 'x',
        held: 'held_per_day',
      },
    ]);
    await reload(page);
    await expect.poll(() => nc.locator('li.delivery').count(), { timeout: 10_000 }).toBe(1);
    expect(await nc.textContent()).not.toContain('No emergency contacts on file.');
    expect(await nc.locator('li.delivery').textContent()).toContain('held back: daily SMS cap');

    mkdirSync('artifacts', { recursive: true });
    await page.screenshot({ path: SCREENSHOT_HELD, fullPage: true });
    await resolve(listed.id);
    await resolve(niaIncident.id);
    await page.close();
  });

  it('the page raised no CSP violation or script error', () => {
    expect(problems).toEqual([]);
  });
});
