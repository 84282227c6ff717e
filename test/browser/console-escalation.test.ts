/**
 * The console's cue escalates while an SOS waits for a moderator (issue 38: paged until
 * acknowledged), in Debian's Chromium against a real in-process Vigil whose
 * PAGE_UNACKNOWLEDGED_AFTER_SECONDS is 2: once the incident is older than that, the title
 * flashes, the card and <body> are marked, the page beeps again and one desktop notification
 * is shown (permission granted); acknowledging ends all of it. Without the permission, no
 * notification but the same title and sound. The sweep is run by hand. The page's Notification and AudioContext are the
 * browser's own, wrapped only to count what was shown and played.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole, chromiumSuite, hasChromium, launchChromium, type Browser } from '../helpers/chromium.js';
import { signToken } from '../../src/auth/tokens.js';
import { loadConfig, type Config } from '../../src/config.js';
import { startVigil, type Vigil } from '../../src/main.js';
import { GENEROUS_LIMITS } from '../helpers/limits.js';

type Json = Record<string, unknown>;

/** Counts notifications shown and beeps played (three oscillators each), through the real APIs. */
const RECORDER = `
  window.__shown = [];
  window.__oscillators = 0;
  const Real = window.Notification;
  if (Real) {
    class Recorded extends Real {
      constructor(title, options) {
        super(title, options);
        window.__shown.push({ title, body: options && options.body, tag: options && options.tag });
      }
    }
    Object.defineProperty(Recorded, 'permission', { get: () => Real.permission });
    Recorded.requestPermission = (...a) => Real.requestPermission(...a);
    window.Notification = Recorded;
  }
  const osc = AudioContext.prototype.createOscillator;
  AudioContext.prototype.createOscillator = function (...a) {
    window.__oscillators++;
    return osc.apply(this, a);
  };
`;

describe.skipIf(!hasChromium)(chromiumSuite('the console cue escalates for an unacknowledged SOS'), () => {
  let dataDir: string;
  let browser: Browser;
  let config: Config;
  let vigil: Vigil;
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
    const page = await browser.context.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    await page.addInitScript(RECORDER);
    await page.goto(`${vigil.url}/console/`);
    await page.getByLabel('Moderator token (JWT)').fill(modToken());
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    return page;
  }

  const shown = (page: Page) => page.evaluate<{ title: string; body: string; tag: string }[]>('window.__shown');
  const unacknowledged = (page: Page) => page.locator('body').getAttribute('data-unacknowledged');
  const beeps = (page: Page) => page.evaluate<number>('window.__oscillators / 3');

  /** A person whose 1 s timer runs out and is swept (by hand): answers the incident's id. */
  async function sos(user: string, name: string): Promise<string> {
    const tok = token(user, { name });
    expect((await api(tok, 'POST', '/v1/timers', { durationSeconds: 1, locationName: 'Pier 39' })).status).toBe(201);
    await expect.poll(async () => (await vigil.sweeper.sweep()).escalated, { timeout: 20_000, interval: 250 }).toBe(1);
    const r = await api(modToken(), 'GET', '/v1/admin/incidents?status=active');
    const mine = (r.body.incidents as { id: string; userId: string }[]).find((i) => i.userId === user);
    expect(mine).toBeDefined();
    return mine?.id ?? '';
  }

  beforeAll(async () => {
    buildConsole();
    dataDir = mkdtempSync(join(tmpdir(), 'vigil-console-escalation-'));
    config = loadConfig({
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      TIMER_MIN_SECONDS: '1',
      LOG_LEVEL: 'silent',
      PAGE_UNACKNOWLEDGED_AFTER_SECONDS: '2',
      ...GENEROUS_LIMITS,
    });
    vigil = await startVigil(config);
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await vigil?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves the setting to the page', async () => {
    const r = await fetch(`${vigil.url}/console/settings.json`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ pageUnacknowledgedAfterSeconds: 2 });
  });

  it('past the setting: flashing title, marked card, a repeated beep and one notification; acknowledging ends it', async () => {
    await browser.context.grantPermissions(['notifications'], { origin: vigil.url });
    const page = await newPage();
    expect(await page.evaluate<string>('Notification.permission')).toBe('granted');
    const id = await sos('una', 'Una Unanswered');
    const card = page.locator(`#incident-${id}`);
    await card.waitFor();

    // escalated: the body says how many wait, the card is marked, the title flashes
    await page.locator('body[data-unacknowledged="1"]').waitFor({ timeout: 10_000 });
    await expect.poll(() => card.getAttribute('class')).toContain('card--overdue');
    const titles = new Set<string>();
    await expect
      .poll(
        async () => {
          titles.add(await page.title());
          return titles.size;
        },
        { timeout: 10_000, interval: 200 },
      )
      .toBe(2);
    expect([...titles].sort()).toEqual(['(1) SOS · Vigil console', '⚠ 1 UNACKNOWLEDGED SOS · Vigil console']);

    // the new-SOS beep and at least one escalation beep; one notification, however many ticks pass
    await expect.poll(() => beeps(page), { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    await expect.poll(() => shown(page)).toHaveLength(1);
    const [n] = await shown(page);
    expect(n).toMatchObject({ title: 'Unacknowledged SOS', tag: `vigil-sos-${id}` });
    expect(n?.body).toContain('Una Unanswered has waited');
    // a few more ticks (one flash on, one off): still one notification
    await expect.poll(() => page.title(), { timeout: 5_000, interval: 100 }).toMatch(/^⚠/);
    await expect.poll(() => page.title(), { timeout: 5_000, interval: 100 }).not.toMatch(/^⚠/);
    expect(await shown(page)).toHaveLength(1);

    // a moderator acknowledges (elsewhere): the cue stops, the title stays plain
    expect((await api(modToken(), 'POST', `/v1/admin/incidents/${id}/ack`)).status).toBe(200);
    await expect.poll(() => unacknowledged(page), { timeout: 10_000 }).toBeNull();
    await expect.poll(() => card.getAttribute('class')).not.toContain('card--overdue');
    const beepsAfter = await beeps(page);
    // three ticks later: no flash, no beep
    const t0 = await page.evaluate<number>('performance.now()');
    await expect
      .poll(() => page.evaluate<number>(`performance.now() - ${String(t0)}`), { timeout: 10_000, interval: 500 })
      .toBeGreaterThan(3000);
    expect(await page.title()).toBe('Vigil console');
    expect(await beeps(page)).toBe(beepsAfter);
    expect(await shown(page)).toHaveLength(1);
    expect((await api(modToken(), 'POST', `/v1/admin/incidents/${id}/resolve`)).status).toBe(200);
    await page.close();
    expect(problems).toEqual([]);
  });

  it('without the notification permission: the title and the sound escalate, no notification', async () => {
    await browser.context.clearPermissions();
    const page = await newPage();
    expect(await page.evaluate<string>('Notification.permission')).not.toBe('granted');
    const id = await sos('vic', 'Vic Waiting');
    await page.locator(`#incident-${id}`).waitFor();
    await page.locator('body[data-unacknowledged="1"]').waitFor({ timeout: 10_000 });
    await expect.poll(() => page.title(), { timeout: 5_000, interval: 100 }).toBe('⚠ 1 UNACKNOWLEDGED SOS · Vigil console');
    await expect.poll(() => beeps(page), { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    expect(await shown(page)).toEqual([]);
    expect((await api(modToken(), 'POST', `/v1/admin/incidents/${id}/resolve`)).status).toBe(200);
    await expect.poll(() => unacknowledged(page), { timeout: 10_000 }).toBeNull();
    await page.close();
    expect(problems).toEqual([]);
  });
});
