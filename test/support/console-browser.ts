import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { AdminPerson } from './admin-issuer.js';
import { skipWithoutTool } from './required-tool.js';

/** Debian's chromium: the system's browser, never one downloaded by the tests. */
export const CHROMIUM = '/usr/bin/chromium';

export function chromiumAbsent(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is not installed (Debian's chromium package; .ci/run installs it)`;
}

/** For node:test's `skip` of a browser test: skipped without chromium, failed in CI. */
export function chromiumMissing(): string | false {
  return skipWithoutTool('chromium', chromiumAbsent());
}

export function launchChromium(): Promise<Browser> {
  // CI runs as root, where chromium's sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

/** From the console's first page, through the provider's own login form, back to the console. */
export async function signInWithBrowser(page: Page, consoleBase: string, person: AdminPerson, path = '/'): Promise<void> {
  await page.goto(`${consoleBase}${path}`);
  await page.getByLabel('E-mail').fill(person.email);
  await page.getByLabel('Password').fill(person.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.href.startsWith(consoleBase) && !url.pathname.startsWith('/auth/'));
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}
