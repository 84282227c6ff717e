/**
 * The console's (re)connect with a full board, in Debian's Chromium (playwright-core) against a
 * real in-process Vigil: the trails of every open incident come in ONE request
 * (`GET /v1/admin/incidents/locations?ids=`), not one per card, so a moderator whose budget is
 * smaller than the board can still acknowledge afterwards. Every (re)connect runs the same
 * reload (live.ts `ready`), the first one included.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole, chromiumSuite, hasChromium, launchChromium, type Browser } from '../helpers/chromium.js';
import { signToken } from '../../src/auth/tokens.js';
import { loadConfig, type Config } from '../../src/config.js';
import { startVigil, type Vigil } from '../../src/main.js';
import { RecordingCarrier } from '../helpers/recording-carrier.js';

/** More open incidents than the moderator's request budget. */
const OPEN = 30;
const BUDGET = 12;

describe.skipIf(!hasChromium)(chromiumSuite('console: the trails of a full board in one request'), () => {
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
    dataDir = mkdtempSync(join(tmpdir(), 'vigil-console-trails-'));
    config = loadConfig({
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      // the moderator's budget is smaller than the board; the page's own files and the people are not limited here
      RATE_LIMIT_PER_PERSON: String(BUDGET),
      RATE_LIMIT_WINDOW_MS: '60000',
      RATE_LIMIT_HOLD_MS: '0',
      RATE_LIMIT_PER_IP: '1000000',
      SOCKETS_PER_USER: '100',
    });
    vigil = await startVigil(config, { carrier: new RecordingCarrier() });
    browser = await launchChromium();
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    await vigil?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it(`${OPEN} open incidents: one trail request on connect, the trails on the cards, and acknowledge still answers`, async () => {
    // 30 people press the panic button; three of them post a fix for their incident
    const ids: string[] = [];
    for (let n = 0; n < OPEN; n++) {
      const tok = token(`board-${n}`, { name: `Person ${String(n).padStart(2, '0')}` });
      const sos = await api(tok, 'POST', '/v1/sos', {});
      expect(sos.status).toBe(201);
      const id = String((sos.body.incident as { id: string }).id);
      ids.push(id);
      if (n < 3) expect((await api(tok, 'POST', `/v1/incidents/${id}/location`, { lat: 52.5 + n / 100, lng: 13.4 })).status).toBe(200);
    }

    const page = await context.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    const trailRequests: string[] = [];
    page.on('request', (r) => {
      const path = new URL(r.url()).pathname;
      if (path.endsWith('/locations')) trailRequests.push(`${path}${new URL(r.url()).search}`);
    });
    await page.goto(`${vigil.url}/console/`);
    await page.getByLabel('Moderator token (JWT)').fill(token('board-mod', { admin: true, name: 'Mona Moderator' }));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    await expect.poll(() => page.locator('#lane-active li.card').count(), { timeout: 10_000 }).toBe(OPEN);

    // the fixes posted before are on their cards
    for (let n = 0; n < 3; n++) {
      const card = page.locator('#lane-active li.card', { hasText: `Person ${String(n).padStart(2, '0')}` });
      await expect.poll(() => card.locator('.trail__fix').count(), { timeout: 10_000 }).toBe(1);
    }
    expect(trailRequests).toHaveLength(1);
    expect(trailRequests[0]).toMatch(/^\/v1\/admin\/incidents\/locations\?ids=/);
    expect(new Set(new URLSearchParams(trailRequests[0]?.split('?')[1]).get('ids')?.split(','))).toEqual(new Set(ids));

    // the budget left is enough to act: acknowledge answers (one request per card would have spent it)
    const first = page.locator('#lane-active li.card', { hasText: 'Person 05' });
    await first.getByRole('button', { name: /^Acknowledge/ }).click();
    await page.locator('#lane-acked li.card', { hasText: 'Person 05' }).waitFor({ timeout: 10_000 });
    expect((await vigil.store.getIncident(ids[5] ?? ''))?.status).toBe('acknowledged');
    expect(problems).toEqual([]);
    await page.close();
  });
});
