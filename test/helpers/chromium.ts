/**
 * The console's browser tests in Debian's Chromium (never a downloaded browser), driven by
 * playwright-core: one launch, one build of the page, one rule for a missing browser
 * (CI fails, a local run skips and says why).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`the console tests need Debian's chromium at ${CHROMIUM} (apt-get install chromium)`);

/** A suite's name that says why it was skipped when Chromium is missing. */
export const chromiumSuite = (name: string): string =>
  hasChromium ? `${name} (Chromium)` : `${name} (skipped: no chromium at ${CHROMIUM})`;

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** The page is compiled TypeScript: build it so the test serves the current source. */
export function buildConsole(): void {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'src/console/client/tsconfig.json'], { stdio: 'inherit' });
  cpSync('src/console/static', 'dist/console/static', { recursive: true });
}

export interface Browser {
  context: BrowserContext;
  /** closes the browser and removes its profile */
  close(): Promise<void>;
}

/** Chromium on a throwaway profile: UTC, en-GB, 10 s default timeout. */
export async function launchChromium(opts: { height?: number } = {}): Promise<Browser> {
  const profileDir = mkdtempSync(join(tmpdir(), 'vigil-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      args: ARGS,
      headless: true,
      viewport: { width: 1360, height: opts.height ?? 940 },
      locale: 'en-GB',
      timezoneId: 'UTC',
    });
    context.setDefaultTimeout(10_000);
    return {
      context,
      async close() {
        await context.close();
        rmSync(profileDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(profileDir, { recursive: true, force: true });
    throw err;
  }
}
