import { existsSync } from "node:fs";
import puppeteer, { type Browser } from "puppeteer-core";

export const CHROMIUM = "/usr/bin/chromium";

/** Whether Debian's chromium is here; in CI it must be (npm test's pretest step installs it). */
export function haveChromium(): boolean {
  const present = existsSync(CHROMIUM);
  if (!present && process.env.CI) throw new Error("chromium must be installed in CI");
  return present;
}

/** A headless Chromium (Debian's), driven over the DevTools protocol; close it when done. */
export function launchChromium(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // The tests run as root in a container, where Chromium's sandbox cannot start.
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}
