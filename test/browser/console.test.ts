/**
 * The moderator console in a real browser: Debian's Chromium driven by playwright-core
 * (never a downloaded browser) against a real in-process Vigil on loopback.
 * A screenshot of the board with an active incident is saved to artifacts/ (git-ignored).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole, chromiumSuite, hasChromium, launchChromium, type Browser } from '../helpers/chromium.js';
import { loadConfig, type Config } from '../../src/config.js';
import { signToken } from '../../src/auth/tokens.js';
import { startVigil, type Vigil } from '../../src/main.js';
import { GENEROUS_LIMITS } from '../helpers/limits.js';
import type { AttemptResult } from '../../src/domain/delivery.js';
import type { Carrier, OutgoingSms } from '../../src/sms/port.js';

const SCREENSHOT = join('artifacts', 'console-board.png');

/** Numbers in `failing` are refused for good; numbers in `flaky` always get a retryable error. */
class TestCarrier implements Carrier {
  readonly name = 'test-sms';
  readonly failing = new Set<string>();
  readonly flaky = new Set<string>();
  async send(sms: OutgoingSms): Promise<AttemptResult> {
    if (this.failing.has(sms.to)) return { ok: false, carrier: this.name, retryable: false, code: 'invalid_number' };
    if (this.flaky.has(sms.to)) return { ok: false, carrier: this.name, retryable: true, code: 'http_503' };
    return { ok: true, carrier: this.name, providerMessageId: `test:${sms.idempotencyKey}` };
  }
}

interface Answer {
  status: number;
  body: unknown;
}

/** A nested field of a JSON answer, for assertions. */
function at(v: unknown, ...path: string[]): unknown {
  let cur = v;
  for (const k of path) cur = typeof cur === 'object' && cur !== null ? (cur as Record<string, unknown>)[k] : undefined;
  return cur;
}

describe.skipIf(!hasChromium)(chromiumSuite('moderator console'), () => {
  let dataDir: string;
  let browser: Browser;
  let config: Config;
  let vigil: Vigil;
  let url: string;
  let context: BrowserContext;
  const carrier = new TestCarrier();
  const problems: string[] = [];

  const token = (sub: string, o: { admin?: boolean; name?: string } = {}) => signToken(config.jwtSecret ?? '', { sub, ...o });
  const modToken = () => token('mod', { admin: true, name: 'Mona Moderator' });

  async function api(tok: string, method: string, path: string, body?: unknown): Promise<Answer> {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as unknown };
  }

  async function start(port: string, manualTicks = false): Promise<void> {
    config = loadConfig({
      DATA_DIR: dataDir,
      PORT: port,
      HOST: '127.0.0.1',
      TIMER_MIN_SECONDS: '1',
      LOG_LEVEL: 'silent',
      ...GENEROUS_LIMITS,
      DELIVERY_BACKOFF_BASE_MS: '2000',
    });
    vigil = await startVigil(config, { carrier });
    if (!manualTicks) vigil.startTicks();
    url = vigil.url;
  }

  async function newPage(): Promise<Page> {
    const page = await context.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy|Refused to/i.test(msg.text())) problems.push(`console: ${msg.text()}`);
    });
    return page;
  }

  async function signIn(page: Page, tok: string): Promise<void> {
    await page.goto(`${url}/console/`);
    await page.getByLabel('Moderator token (JWT)').fill(tok);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
  }

  /** Arms a timer for `user` through the API, with contacts; answers the timer id. */
  async function arm(
    user: string,
    name: string,
    seconds: number,
    contacts: { name: string; phone: string }[],
    place?: { name: string; lat: number; lng: number },
  ): Promise<string> {
    const tok = token(user, { name });
    expect((await api(tok, 'PUT', '/v1/me/contacts', { contacts })).status).toBe(200);
    const res = await api(tok, 'POST', '/v1/timers', {
      durationSeconds: seconds,
      ...(place ? { locationName: place.name, location: { lat: place.lat, lng: place.lng } } : {}),
    });
    expect(res.status).toBe(201);
    return String(at(res.body, 'timer', 'id'));
  }

  const card = (page: Page, lane: 'active' | 'acked', who: string) => page.locator(`#lane-${lane} li.card`, { hasText: who });

  beforeAll(async () => {
    buildConsole();
    dataDir = mkdtempSync(join(tmpdir(), 'vigil-console-'));
    await start('0');
    const probe = await fetch(`${url}/console/`);
    if (probe.status === 404)
      throw new Error("src/main.ts does not mount the console: pass extra: [{ path: '/console', router: consoleRouter() }] to createApp");
    browser = await launchChromium();
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    await vigil?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves the page with a strict CSP and no third-party resources', async () => {
    const res = await fetch(`${url}/console/`);
    expect(res.status).toBe(200);
    // 'self' covers the same-origin WebSocket too (CSP 3): no ws: / wss: to any host
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'self'; connect-src 'self';/);
    const html = await res.text();
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script>(?!<)/); // no inline script
    const io = await fetch(`${url}/console/socket.io.min.js`);
    expect(io.status).toBe(200);
    expect(await io.text()).toContain('Socket.IO');
    const redirect = await fetch(`${url}/console`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/console/');
  });

  it("refuses a person's token with a clear message and never opens a socket", async () => {
    const page = await newPage();
    const sockets: string[] = [];
    const apiCalls: string[] = [];
    page.on('request', (r) => {
      const path = new URL(r.url()).pathname;
      if (path.startsWith('/socket.io/')) sockets.push(r.url());
      if (path.startsWith('/v1/')) apiCalls.push(r.url());
    });
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await page.goto(`${url}/console/`);

    await page.getByLabel('Moderator token (JWT)').fill(token('alice', { name: 'Alice Example' }));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#signin-error').textContent()).toContain('not a moderator');
    expect(await page.locator('#app').isHidden()).toBe(true);

    // a token that claims the role but is not signed by this Vigil: the API refuses it (401)
    const forged = signToken('x'.repeat(40), { sub: 'mallory', admin: true });
    await page.getByLabel('Moderator token (JWT)').fill(forged);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#signin-error').textContent()).toContain('refused this token');

    await page.waitForTimeout(500);
    expect(sockets).toEqual([]);
    expect(apiCalls).toHaveLength(2); // only the forged token reached the API (active + acknowledged reads)
    expect(await page.evaluate("sessionStorage.getItem('vigil.console.token')")).toBeNull();
    await page.close();
  });

  it('shows the source of an incident: a panic SOS live on its card; a second press keeps one card', async () => {
    const page = await newPage();
    await signIn(page, modToken());
    const pia = token('pia-panic', { name: 'Pia Panic' });
    const r = await api(pia, 'POST', '/v1/sos', { locationName: 'Harbour steps', location: { lat: 51.5, lng: -0.12 } });
    expect(r.status).toBe(201);
    const c = card(page, 'active', 'Pia Panic');
    await expect.poll(() => c.locator('.card__source').textContent()).toBe('Panic button');
    expect(await c.locator('.card__source').getAttribute('data-source')).toBe('panic');
    expect(await c.textContent()).toContain('Harbour steps');
    // the same person presses again: one card, the source unchanged
    expect((await api(pia, 'POST', '/v1/sos', {})).status).toBe(200);
    expect(await page.locator('#lane-active li.card', { hasText: 'Pia Panic' }).count()).toBe(1);
    // leave the board empty for the cases after this one
    const id = String(at(r.body, 'incident', 'id'));
    expect((await api(modToken(), 'POST', `/v1/admin/incidents/${id}/resolve`)).status).toBe(200);
    await expect.poll(() => page.locator('#lane-active li.card', { hasText: 'Pia Panic' }).count()).toBe(0);
    await page.close();
  });

  it('shows a new SOS live on two consoles; acknowledging in one updates the API and the other', async () => {
    const a = await newPage();
    const b = await newPage();
    await signIn(a, modToken());
    await signIn(b, modToken());
    expect(await a.locator('#lane-active li.card').count()).toBe(0);

    carrier.failing.add('+14155550199');
    carrier.flaky.add('+14155550177');
    // a second person whose timer is still running, for the timers panel
    await arm('carol', 'Carol Chen', 600, [{ name: 'Dan', phone: '+14155550111' }], {
      name: 'Ferry Building',
      lat: 37.7955,
      lng: -122.3937,
    });
    await arm(
      'alice',
      'Alice Example',
      2,
      [
        { name: 'Bob Brother', phone: '+14155550123' },
        { name: 'Sam Sister', phone: '+14155550199' },
        { name: 'Pat Partner', phone: '+14155550177' },
      ],
      { name: 'Blue Bottle Café, Mint Plaza', lat: 37.78255, lng: -122.40781 },
    );

    // no reload: the SOS arrives over Socket.IO
    const cardA = card(a, 'active', 'Alice Example');
    await cardA.waitFor({ timeout: 15_000 });
    await card(b, 'active', 'Alice Example').waitFor({ timeout: 5_000 });
    expect(await cardA.getAttribute('class')).toContain('card--new');
    expect(await a.title()).toBe('(1) SOS · Vigil console');
    await expect.poll(() => a.locator('#announce-sos').textContent()).toContain('New SOS: Alice Example at Blue Bottle Café');
    await expect.poll(() => cardA.locator('.card__ago').textContent()).toMatch(/^Deadline passed \d+ s ago$/);
    expect(await cardA.textContent()).toContain('Blue Bottle Café, Mint Plaza');
    expect(await cardA.getByRole('link', { name: /37\.78255, -122\.40781/ }).getAttribute('href')).toContain(
      'mlat=37.78255&mlon=-122.40781',
    );

    // per-contact delivery status, live from delivery.updated
    const status = (who: string) => cardA.locator('li.delivery', { hasText: who }).locator('.badge');
    await expect.poll(() => status('Bob Brother').getAttribute('data-status'), { timeout: 10_000 }).toBe('sent');
    await expect.poll(() => status('Sam Sister').getAttribute('data-status'), { timeout: 10_000 }).toBe('failed');
    await expect
      .poll(() => cardA.locator('li.delivery', { hasText: 'Pat Partner' }).textContent(), { timeout: 10_000 })
      .toContain('http_503');
    expect(await status('Pat Partner').textContent()).toBe('pending');
    expect(await cardA.locator('li.delivery', { hasText: 'Bob Brother' }).textContent()).toContain('+14155550123');

    // the timers view for the person whose timer still runs
    await a.getByLabel('Person (user id)').fill('carol');
    // carol has no SOS: the look needs a stated reason (recorded in the audit)
    await a.getByLabel('Reason', { exact: true }).fill('Support call: is her timer still running?');
    await a.getByRole('button', { name: 'Show timers' }).click();
    const carolRow = a.locator('#timers-body tr').first();
    await expect.poll(() => carolRow.textContent()).toContain('running');
    const left1 = await carolRow.locator('.timer__left').textContent();
    expect(left1).toMatch(/^9 min \d\d s left$/);
    await expect.poll(() => carolRow.locator('.timer__left').textContent(), { timeout: 5_000 }).not.toBe(left1); // it ticks
    expect(await carolRow.textContent()).toContain('Ferry Building');

    mkdirSync('artifacts', { recursive: true });
    await a.screenshot({ path: SCREENSHOT, fullPage: true });

    // acknowledge in tab A, from the keyboard
    const incidentId = await cardA.getAttribute('data-incident-id');
    await cardA.getByRole('button', { name: /^Acknowledge/ }).focus();
    await a.keyboard.press('Enter');
    const ackedA = card(a, 'acked', 'Alice Example');
    await ackedA.waitFor({ timeout: 5_000 });
    expect(await ackedA.textContent()).toContain('Acknowledged by mod');
    // focus stays in the card, on its next action. The card can reach the acknowledged lane from the
    // incident.updated event before the command's own answer, which is what moves the focus: wait for it.
    await expect
      .poll(() => a.evaluate('document.activeElement && document.activeElement.textContent'), { timeout: 5_000 })
      .toBe('Resolve — Alice Example');
    expect(await a.title()).toBe('Vigil console');
    const state = await api(modToken(), 'GET', `/v1/admin/incidents/${String(incidentId)}`);
    expect(at(state.body, 'incident', 'status')).toBe('acknowledged');
    expect(at(state.body, 'incident', 'acknowledgedBy')).toBe('mod');

    // tab B learns it from the incident.updated event
    await card(b, 'acked', 'Alice Example').waitFor({ timeout: 5_000 });
    expect(await b.locator('#lane-active li.card').count()).toBe(0);

    // a reload keeps the tab's sign-in and reads the state back from the API
    await a.reload();
    await a.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    await card(a, 'acked', 'Alice Example').waitFor({ timeout: 5_000 });
    expect(await a.locator('#lane-active li.card').count()).toBe(0);
    expect(
      await card(a, 'acked', 'Alice Example')
        .getByRole('button', { name: /^Acknowledge/ })
        .count(),
    ).toBe(0);

    // resolve in tab B: the incident leaves both boards
    await card(b, 'acked', 'Alice Example')
      .getByRole('button', { name: /^Resolve/ })
      .click();
    await card(b, 'acked', 'Alice Example').waitFor({ state: 'detached', timeout: 5_000 });
    await card(a, 'acked', 'Alice Example').waitFor({ state: 'detached', timeout: 5_000 });
    expect(at((await api(modToken(), 'GET', `/v1/admin/incidents/${String(incidentId)}`)).body, 'incident', 'status')).toBe('resolved');

    // mute is a real toggle button and survives a reload of the tab
    const mute = a.getByRole('button', { name: /Mute alerts|Alerts muted/ });
    expect(await mute.getAttribute('aria-pressed')).toBe('false');
    await mute.click();
    expect(await mute.getAttribute('aria-pressed')).toBe('true');
    await a.reload();
    await a.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    expect(await a.getByRole('button', { name: /Mute alerts|Alerts muted/ }).getAttribute('aria-pressed')).toBe('true');
    await a.close();
    await b.close();
  });

  it('shows the connection state and, after a reconnect, the SOS raised while it was away', async () => {
    const page = await newPage();
    await signIn(page, modToken());
    const port = String(vigil.port);

    await arm('erin', 'Erin Example', 2, [{ name: 'Frank', phone: '+14155550155' }], {
      name: 'Dolores Park',
      lat: 37.7596,
      lng: -122.4269,
    });
    await vigil.stop(); // the timer expires while no Vigil is running
    await expect.poll(() => page.locator('#conn').getAttribute('data-state'), { timeout: 10_000 }).not.toBe('live');
    await page.waitForTimeout(2500);
    // same data dir and port; sweep at once, before the page is back: it misses sos.triggered
    await start(port, true);
    expect((await vigil.sweeper.sweep()).escalated).toBe(1);

    // the page reconnects on its own and re-reads the board over REST
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 20_000 });
    const erin = card(page, 'active', 'Erin Example');
    await erin.waitFor({ timeout: 15_000 });
    expect(await page.locator('#lane-active li.card').count()).toBe(1);
    // no dispatcher ran: the contact shows as pending, as REST reports it
    expect(await erin.locator('li.delivery', { hasText: 'Frank' }).locator('.badge').getAttribute('data-status')).toBe('pending');
    await page.close();
  });

  it('the page raised no CSP violation or script error', () => {
    expect(problems).toEqual([]);
  });
});
