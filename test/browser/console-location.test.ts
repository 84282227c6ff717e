/**
 * The location trail on the console's incident card, in Debian's Chromium (playwright-core)
 * against a real in-process Vigil: the fix posted before the SOS is on the card when it
 * appears, fixes posted while the incident is open arrive live (`location.updated`), and
 * whom the person was meeting is shown, with the met person's whole number (events mask it).
 * A screenshot goes to artifacts/ (git-ignored).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole, chromiumSuite, hasChromium, launchChromium, type Browser } from '../helpers/chromium.js';
import { signToken } from '../../src/auth/tokens.js';
import { loadConfig, type Config } from '../../src/config.js';
import { startVigil, type Vigil } from '../../src/main.js';
import { RecordingCarrier } from '../helpers/recording-carrier.js';

const SCREENSHOT = join('artifacts', 'console-location-trail.png');

const M = 1 / 111_195; // a metre of latitude in degrees
const CAFE = { lat: 37.7765, lng: -122.4172 };

describe.skipIf(!hasChromium)(chromiumSuite('console: location trail on the incident card'), () => {
  let dataDir: string;
  let browser: Browser;
  let config: Config;
  let vigil: Vigil;
  let context: BrowserContext;
  const problems: string[] = [];

  const token = (sub: string, o: { admin?: boolean; name?: string } = {}) => signToken(config.jwtSecret ?? '', { sub, ...o });
  async function api(
    tok: string,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${vigil.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  beforeAll(async () => {
    buildConsole();
    dataDir = mkdtempSync(join(tmpdir(), 'vigil-console-loc-'));
    config = loadConfig({
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      TIMER_MIN_SECONDS: '1',
      LOG_LEVEL: 'silent',
      LOCATION_MIN_INTERVAL_SECONDS: '0',
    });
    vigil = await startVigil(config, { carrier: new RecordingCarrier() });
    vigil.startTicks();
    browser = await launchChromium();
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    await vigil?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('shows the trail (fix before the SOS, then live fixes) and whom they were meeting', async () => {
    const page = await context.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    await page.goto(`${vigil.url}/console/`);
    await page.getByLabel('Moderator token (JWT)').fill(token('mod', { admin: true, name: 'Mona Moderator' }));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });

    const erin = token('erin', { name: 'Erin Example' });
    expect((await api(erin, 'PUT', '/v1/me/contacts', { contacts: [{ name: 'Frank Friend', phone: '+14155550142' }] })).status).toBe(200);
    const armed = await api(erin, 'POST', '/v1/timers', {
      durationSeconds: 3,
      locationName: 'Blue Bottle Café',
      location: CAFE,
      meeting: { name: 'Sam from the app', phone: '+14155550188' },
    });
    expect(armed.status).toBe(201);
    const timerId = String((armed.body.timer as { id: string }).id);
    // before the SOS: one fix, a few hundred metres down the road
    const first = { lat: CAFE.lat + 300 * M, lng: CAFE.lng };
    expect((await api(erin, 'POST', `/v1/timers/${timerId}/location`, { ...first, accuracyM: 12 })).body.kept).toBe(true);

    const card = page.locator('#lane-active li.card', { hasText: 'Erin Example' });
    await card.waitFor({ timeout: 20_000 });
    await expect.poll(() => card.locator('.trail__fix').count(), { timeout: 10_000 }).toBe(1);
    expect(await card.textContent()).toContain('Sam from the app');
    // events mask the met person's number; the card shows the whole one REST gave, to call
    await expect
      .poll(async () => card.locator('dd', { hasText: 'Sam from the app' }).textContent(), { timeout: 10_000 })
      .toContain('+14155550188');
    expect(await card.locator('.trail__fix--latest').textContent()).toContain(`${first.lat.toFixed(5)}, ${first.lng.toFixed(5)}`);

    // while the incident is open, fixes arrive live
    const path = [
      { lat: first.lat + 200 * M, lng: first.lng + 0.002 },
      { lat: first.lat + 500 * M, lng: first.lng + 0.004 },
      { lat: first.lat + 900 * M, lng: first.lng + 0.005 },
    ];
    for (const p of path) expect((await api(erin, 'POST', `/v1/timers/${timerId}/location`, p)).body.kept).toBe(true);
    await expect.poll(() => card.locator('.trail__fix').count(), { timeout: 10_000 }).toBe(4);
    const last = path[path.length - 1] ?? first;
    expect(await card.locator('.trail__fix--latest').textContent()).toContain(`${last.lat.toFixed(5)}, ${last.lng.toFixed(5)}`);
    expect(await card.locator('.trail__sketch polyline').getAttribute('points')).toMatch(/^(\S+ ){3}\S+$/);
    // the contacts got the one follow-up: the card lists it among the deliveries
    await expect.poll(() => card.locator('.delivery', { hasText: 'follow-up' }).count(), { timeout: 10_000 }).toBe(1);

    mkdirSync('artifacts', { recursive: true });
    await card.screenshot({ path: SCREENSHOT });
    await page.screenshot({ path: join('artifacts', 'console-location-board.png'), fullPage: true });

    // a later event (another moderator's acknowledgement) carries the number masked: the card keeps the whole one
    const other = token('mod-2', { admin: true });
    const open = await api(other, 'GET', '/v1/admin/incidents?status=active');
    const incident = (open.body.incidents as { id: string; timerId?: string }[]).find((i) => i.timerId === timerId);
    expect((await api(other, 'POST', `/v1/admin/incidents/${incident?.id ?? 'none'}/ack`, {})).status).toBe(200);
    const acked = page.locator('#lane-acked li.card', { hasText: 'Erin Example' });
    await acked.waitFor({ timeout: 10_000 });
    expect(await acked.locator('dd', { hasText: 'Sam from the app' }).textContent()).toContain('+14155550188');
    expect(problems).toEqual([]);
    await page.close();
  });
});
