// Headless Chromium for the tests: Debian's /usr/bin/chromium driven by playwright-core (never a
// downloaded browser), with a fresh profile directory per launch.
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS } from './chromium-args.mjs';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';


/** A browser context on a fresh profile; `close()` removes the profile too. Page errors and
 *  console errors are collected in `errors`. */
export async function launch() {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'twoplane-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const errors = [];
  const watch = (page) => {
    page.on('pageerror', (err) => errors.push(`pageerror: ${err.stack ?? err}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
    });
  };
  context.on('page', watch);
  for (const page of context.pages()) watch(page);
  return {
    context,
    errors,
    async page() {
      const existing = context.pages();
      return existing.length > 0 ? existing[0] : context.newPage();
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Load `url` and wait for the page to set `window.__result`; returns it. */
export async function runPage(browser, url, timeoutMs = 60000) {
  const page = await browser.page();
  await page.goto(url);
  await page.waitForFunction(() => window.__result !== undefined, null, { timeout: timeoutMs, polling: 50 });
  return page.evaluate(() => window.__result);
}
