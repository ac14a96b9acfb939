// The one way the tests drive a browser: Debian's /usr/bin/chromium (or CHROMIUM_PATH) through
// playwright-core, headless, with a throw-away profile and no background traffic. Where Chromium
// is missing, a test file calls missingChromium() and skips: loudly, never as a pass.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);

/** Prints a banner naming what is not being tested; returns the title for an it.skip. */
export function missingChromium(what: string): string {
  const bar = '!'.repeat(100);
  console.warn(
    `\n${bar}\nWARNING: ${CHROMIUM} not found — ${what} is SKIPPED, NOT PASSED.\n` +
      `Install it (test/browser/install-chromium.sh, i.e. apt-get install -y chromium on Debian) or set CHROMIUM_PATH.\n${bar}\n`,
  );
  return `WARNING: ${what} NOT RUN — ${CHROMIUM} missing (run test/browser/install-chromium.sh)`;
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** console lines and page errors so far, for failure messages */
  console: string[];
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'kmas-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const lines: string[] = [];
  page.on('console', (m) => lines.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => lines.push(`pageerror: ${e.message}`));
  return {
    context, page, console: lines,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
