/**
 * Moderator actions in the console, in Debian's Chromium (playwright-core) against a real
 * in-process Vigil: cancel pending texts, resend a failed one, add a note that a second
 * console sees live. Ticks are driven by hand. A screenshot goes to artifacts/ (git-ignored).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole, chromiumSuite, hasChromium, launchChromium, type Browser } from '../helpers/chromium.js';
import { signToken } from '../../src/auth/tokens.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { AttemptResult } from '../../src/domain/delivery.js';
import { startVigil, type Vigil } from '../../src/main.js';
import type { Carrier, OutgoingSms } from '../../src/sms/port.js';

const SCREENSHOT = join('artifacts', 'console-moderation.png');

/** `failing`: refused for good (failed); `flaky`: a retryable error (back to pending). */
class TestCarrier implements Carrier {
  readonly name = 'test-sms';
  readonly failing = new Set<string>();
  readonly flaky = new Set<string>();
  readonly sent: string[] = [];
  async send(sms: OutgoingSms): Promise<AttemptResult> {
    if (this.failing.has(sms.to)) return { ok: false, carrier: this.name, retryable: false, code: 'invalid_number' };
    if (this.flaky.has(sms.to)) return { ok: false, carrier: this.name, retryable: true, code: 'http_503' };
    this.sent.push(sms.to);
    return { ok: true, carrier: this.name, providerMessageId: `test:${sms.idempotencyKey}:${this.sent.length}` };
  }
}

describe.skipIf(!hasChromium)(chromiumSuite('moderator actions in the console'), () => {
  let dataDir: string;
  let browser: Browser;
  let config: Config;
  let vigil: Vigil;
  let context: BrowserContext;
  const carrier = new TestCarrier();
  const problems: string[] = [];
  const token = (sub: string, o: { admin?: boolean; name?: string } = {}) => signToken(config.jwtSecret ?? '', { sub, ...o });
  const modToken = () => token('mod', { admin: true, name: 'Mona Moderator' });

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

  const dispatchRound = async () => {
    await vigil.dispatcher.tick();
    await vigil.dispatcher.drain();
  };

  beforeAll(async () => {
    buildConsole();
    dataDir = mkdtempSync(join(tmpdir(), 'vigil-console-mod-'));
    config = loadConfig({
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      TIMER_MIN_SECONDS: '1',
      LOG_LEVEL: 'silent',
      DELIVERY_BACKOFF_BASE_MS: '60000',
    });
    vigil = await startVigil(config, { carrier });
    browser = await launchChromium({ height: 1100 });
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    await vigil?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('cancel pending texts, resend a failed one, add a note that the other console sees live', async () => {
    const a = await newPage();
    const b = await newPage();
    const [bob, sam, pat] = ['+14155550401', '+14155550402', '+14155550403'];
    carrier.failing.add(sam);
    carrier.flaky.add(pat);
    const alice = token('alice', { name: 'Alice Example' });
    await api(alice, 'PUT', '/v1/me/contacts', {
      contacts: [
        { name: 'Bob Brother', phone: bob },
        { name: 'Sam Sister', phone: sam },
        { name: 'Pat Partner', phone: pat },
      ],
    });
    const armed = await api(alice, 'POST', '/v1/timers', { durationSeconds: 1, locationName: 'Blue Bottle Café' });
    const deadline = Date.parse(String((armed.body.timer as { expiresAt: string }).expiresAt));
    await expect.poll(() => Date.now() > deadline, { timeout: 10_000 }).toBe(true);
    expect((await vigil.sweeper.sweep()).escalated).toBe(1);
    await dispatchRound();

    const card = a.locator('#lane-active li.card', { hasText: 'Alice Example' });
    await card.waitFor({ timeout: 10_000 });
    const row = (who: string) => card.locator('li.delivery', { hasText: who });
    const status = (who: string) => row(who).locator('.badge').getAttribute('data-status');
    await expect.poll(() => status('Sam Sister')).toBe('failed');
    await expect.poll(() => status('Pat Partner')).toBe('pending');
    expect(
      await row('Bob Brother')
        .getByRole('button', { name: /^Resend/ })
        .count(),
    ).toBe(0);

    // cancel: the pending text is never sent
    await card.getByRole('button', { name: /^Cancel pending texts/ }).click();
    await expect.poll(() => status('Pat Partner')).toBe('superseded');
    expect(await row('Pat Partner').textContent()).toContain('cancelled by a moderator');
    await expect.poll(() => card.getByRole('button', { name: /^Cancel pending texts/ }).isHidden()).toBe(true);
    carrier.flaky.delete(pat);
    await dispatchRound();
    expect(carrier.sent).not.toContain(pat);

    // resend the failed text once the number works
    carrier.failing.delete(sam);
    await row('Sam Sister')
      .getByRole('button', { name: /^Resend/ })
      .click();
    await expect.poll(() => status('Sam Sister')).toBe('pending');
    expect(await row('Sam Sister').textContent()).toContain('resent once');
    await dispatchRound();
    await expect.poll(() => status('Sam Sister')).toBe('sent');
    expect(carrier.sent.filter((p) => p === sam)).toHaveLength(1);

    // a note: written as text (never HTML), seen live by the other console
    const note = 'Called Bob <b>he</b> is on his way.\nWill call back at 10.';
    await card.getByLabel('Note').fill(note);
    await card.getByRole('button', { name: /^Add note/ }).click();
    const mine = card.locator('li.note');
    await expect.poll(() => mine.locator('.note__text').textContent()).toBe(note);
    expect(await mine.locator('b').count()).toBe(0);
    expect(await mine.locator('.note__meta').textContent()).toContain('mod');
    expect(await card.getByLabel('Note').inputValue()).toBe('');
    const other = b.locator('#lane-active li.card', { hasText: 'Alice Example' }).locator('li.note .note__text');
    await expect.poll(() => other.textContent(), { timeout: 10_000 }).toBe(note);

    // a refused note shows the server's reason on the card
    await card.getByLabel('Note').fill('sneaky \u202e txt');
    await card.getByRole('button', { name: /^Add note/ }).click();
    await expect.poll(() => card.locator('.error').textContent()).toContain('plain text');

    // every action is in the audit, newest first
    const audit = (await api(modToken(), 'GET', '/v1/admin/audit')).body.audit as { action: string; actor: string }[];
    expect(audit.filter((l) => !l.action.endsWith('.read')).map((l) => l.action)).toEqual([
      'incident.note',
      'delivery.resend',
      'delivery.cancel',
    ]);
    // and so are the console's reads of the person's data (the trail of the card)
    expect(audit.some((l) => l.action === 'trail.read')).toBe(true);
    expect(new Set(audit.map((l) => l.actor))).toEqual(new Set(['mod']));

    mkdirSync('artifacts', { recursive: true });
    await a.screenshot({ path: SCREENSHOT, fullPage: true });
    await a.close();
    await b.close();
  });

  it('the page raised no CSP violation or script error', () => {
    expect(problems).toEqual([]);
  });
});
