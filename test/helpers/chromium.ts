import { existsSync } from 'node:fs';
import type { Page } from 'playwright-core';

/** The browser the browser suites drive (through playwright-core, which downloads nothing). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const HOW_TO_RUN = "install Debian's chromium (apt-get install -y chromium) or set CHROMIUM_PATH";

/**
 * Whether a browser suite can run. Without Chromium it is skipped with one line saying how to run it,
 * except under CI (`CI=true`), where it must run: there a missing browser is an error.
 */
export function chromiumFor(suite: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  const why = `${CHROMIUM} not found`;
  if (process.env.CI === 'true')
    throw new Error(`CI requires Chromium for the ${suite}: ${why}; ${HOW_TO_RUN}`);
  process.stderr.write(`\n*** ${suite} SKIPPED: ${why}. To run it: ${HOW_TO_RUN}.\n`);
  return false;
}

/**
 * The dashboard page's live state (`data-state` of #live-status): "live" once its change stream is open,
 * whether the text says "live" or, after a change event refreshed the page, "updated <time>" (a change
 * made just before the page opened can arrive after it, depending on the machine's load).
 */
export const liveState = (page: Page) => page.locator('#live-status').getAttribute('data-state');
