/**
 * The audit in the console, in Debian's Chromium (playwright-core) against a real in-process
 * Vigil: a look at a person's timers before any SOS asks for a reason and records it; the
 * audit panel lists what moderators did and read, filtered by moderator, person and incident,
 * with "Older lines" following the cursor. A reason with markup is shown as text.
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

const SCREENSHOT = join('artifacts', 'console-audit.png');

describe.skipIf(!hasChromium)(chromiumSuite('the audit in the console'), () => {
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

  async function newPage(moderator: string): Promise<Page> {
    const page = await context.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('dialog', (d) => problems.push(`dialog: ${d.message()}`));
    await page.goto(`${vigil.url}/console/`);
    await page.getByLabel('Moderator token (JWT)').fill(token(moderator, { admin: true }));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    return page;
  }

  beforeAll(async () => {
    buildConsole();
    dataDir = mkdtempSync(join(tmpdir(), 'vigil-console-audit-'));
    config = loadConfig({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', TIMER_MIN_SECONDS: '1', LOG_LEVEL: 'silent' });
    vigil = await startVigil(config);
    browser = await launchChromium({ height: 1400 });
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    await vigil?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('a reason is asked for before any SOS and recorded; the audit filters by moderator, person and incident and pages', async () => {
    // dora has a running timer and no SOS; erin has an open SOS
    expect((await api(token('dora'), 'POST', '/v1/timers', { durationSeconds: 600, locationName: 'Ferry Building' })).status).toBe(201);
    const erin = token('erin', { name: 'Erin Example' });
    const armed = await api(erin, 'POST', '/v1/timers', { durationSeconds: 1 });
    const deadline = Date.parse(String((armed.body.timer as { expiresAt: string }).expiresAt));
    await expect.poll(() => Date.now() > deadline, { timeout: 10_000 }).toBe(true);
    expect((await vigil.sweeper.sweep()).escalated).toBe(1);

    const page = await newPage('mod-una');
    // without a reason: the console asks for one, focuses the field, and nothing is shown
    await page.getByLabel('Person (user id)').fill('dora');
    await page.getByRole('button', { name: 'Show timers' }).click();
    await expect.poll(() => page.locator('#timers-msg').textContent()).toContain('say why you look in Reason');
    await expect.poll(() => page.evaluate('document.activeElement && document.activeElement.id')).toBe('timers-reason');
    expect(await page.locator('#timers-table').isHidden()).toBe(true);
    // with one (markup in it stays text): the timers show
    const reason = 'She called support <b>phone dead</b>';
    await page.getByLabel('Reason', { exact: true }).fill(reason);
    await page.getByRole('button', { name: 'Show timers' }).click();
    await expect.poll(() => page.locator('#timers-body tr').first().textContent()).toContain('Ferry Building');

    // erin's card: acknowledge, then her timers from the card (an open SOS: no reason needed)
    const card = page.locator('#lane-active li.card', { hasText: 'Erin Example' });
    await card.waitFor({ timeout: 10_000 });
    const incidentId = String(await card.getAttribute('data-incident-id'));
    await card.getByRole('button', { name: /^Acknowledge/ }).click();
    await page.locator('#lane-acked li.card', { hasText: 'Erin Example' }).waitFor({ timeout: 5_000 });
    expect((await api(token('mod-vic', { admin: true }), 'GET', `/v1/admin/incidents/${incidentId}`)).status).toBe(200);

    // the audit: every line, then by person, by moderator, by incident
    const rows = page.locator('#audit-body tr');
    const actions = async () => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-action')));
    await page.getByRole('button', { name: 'Show audit' }).click();
    await expect.poll(() => page.locator('#audit-msg').textContent()).toMatch(/lines?, newest first/);

    await page.getByLabel('Person', { exact: true }).fill('dora');
    await page.getByRole('button', { name: 'Show audit' }).click();
    await expect.poll(actions).toEqual(['timers.read']);
    const line = rows.first();
    expect(await line.textContent()).toContain('read the timers');
    expect(await line.locator('td').nth(1).textContent()).toBe('mod-una');
    expect(await line.locator('td').nth(5).textContent()).toBe(reason); // as text: no <b> element made
    expect(await line.locator('b').count()).toBe(0);

    await page.getByLabel('Person', { exact: true }).fill('');
    await page.getByLabel('Moderator', { exact: true }).fill('mod-vic');
    await page.getByRole('button', { name: 'Show audit' }).click();
    await expect.poll(actions).toEqual(['incident.read']);

    await page.getByLabel('Moderator', { exact: true }).fill('mod-una');
    await page.getByLabel('Incident', { exact: true }).fill(incidentId);
    await page.getByRole('button', { name: 'Show audit' }).click();
    await expect.poll(async () => (await actions()).includes('incident.acknowledge')).toBe(true);
    const mine = await rows.evaluateAll((trs) => trs.map((tr) => tr.children[1]?.textContent));
    expect(new Set(mine)).toEqual(new Set(['mod-una']));

    // paging: more lines than a page of 50 → "Older lines" brings the rest, no line twice
    for (let i = 0; i < 55; i++)
      expect((await api(token('mod-wes', { admin: true }), 'GET', `/v1/admin/incidents/${incidentId}/locations`)).status).toBe(200);
    await page.getByLabel('Moderator', { exact: true }).fill('mod-wes');
    await page.getByLabel('Incident', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Show audit' }).click();
    await expect.poll(() => rows.count()).toBe(50);
    await page.getByRole('button', { name: 'Older lines' }).click();
    await expect.poll(() => rows.count()).toBe(55);
    expect(await page.getByRole('button', { name: 'Older lines' }).isHidden()).toBe(true);
    const ids = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-line-id')));
    expect(new Set(ids).size).toBe(55);

    mkdirSync('artifacts', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(problems).toEqual([]);
  });
});
