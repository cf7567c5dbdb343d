// Debian's Firefox ESR driven over WebDriver BiDi by puppeteer-core: the launch, elements found by role and
// accessible name (Firefox's own accessibility tree, through BiDi's browsingContext.locateNodes), and waiting.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import puppeteer from "puppeteer-core";

export const FIREFOX = process.env.FIREFOX_BIN || "/usr/bin/firefox-esr";
export const TIMEOUT_MS = 30_000;

/** Firefox, headless, with a profile of its own (puppeteer makes and removes it). */
export async function launch({ prefs = {}, args = [] } = {}) {
  const browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX,
    headless: true,
    args,
    extraPrefsFirefox: {
      // puppeteer's profile already turns off updates, telemetry and remote settings; nor do captive-portal
      // and connectivity probes leave the machine: only the tests' own requests do.
      "network.captive-portal-service.enabled": false,
      "network.connectivity-service.enabled": false,
      ...prefs,
    },
    defaultViewport: { width: 1280, height: 800 },
    protocolTimeout: 120_000,
  });
  return browser;
}

/** A selector of the element with ARIA role `role` and accessible name `name` (exact), as Firefox computes them. */
export function role(roleName, name) {
  return name === undefined ? `::-p-aria([role="${roleName}"])` : `::-p-aria([name=${JSON.stringify(name)}][role="${roleName}"])`;
}

/** A selector of the element with accessible name `name`, whatever its role (a <summary> has none in Firefox). */
export function named(name) {
  return `::-p-aria([name=${JSON.stringify(name)}])`;
}

/** The selectors nested: `within(role("region", "Bookmark details"), role("button", "Delete"))`. */
export function within(...selectors) {
  return selectors.join(" ");
}

/** Polls `check` until it returns something truthy; fails with `what` and the last value. */
export async function until(check, what, timeout = TIMEOUT_MS) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await check();
      if (last) return last;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what}: not so within ${timeout / 1000} s (last: ${JSON.stringify(last)})`);
}

/** The elements matching `selector` now (none is an empty list; no waiting). */
export async function all(page, selector) {
  return page.$$(selector);
}

/** Clicks the element, waiting for it to be there, visible and still. */
export async function click(page, selector) {
  await page.locator(selector).setTimeout(TIMEOUT_MS).click();
}

/** Replaces a text field's value by typing, as a person does (select all, then type). */
export async function fill(page, selector, value) {
  const field = await page.locator(selector).setTimeout(TIMEOUT_MS).waitHandle();
  await field.click({ count: 3 });
  await field.evaluate((input) => input.select?.());
  await page.keyboard.press("Backspace");
  if (value) await field.type(value);
  await field.dispose();
}

/** The text of the element, waiting for it. */
export async function text(page, selector) {
  const handle = await page.locator(selector).setTimeout(TIMEOUT_MS).waitHandle();
  const value = await handle.evaluate((element) => element.textContent ?? "");
  await handle.dispose();
  return value;
}

/** Waits until the element's text contains `expected`. */
export async function expectText(page, selector, expected, timeout = TIMEOUT_MS) {
  await until(async () => (await textOrNull(page, selector))?.includes(expected), `${selector} shows "${expected}"`, timeout);
}

async function textOrNull(page, selector) {
  const handle = await page.$(selector);
  if (!handle) return null;
  const value = await handle.evaluate((element) => element.textContent ?? "");
  await handle.dispose();
  return value;
}

/** Waits until exactly `count` elements match `selector`. */
export async function expectCount(page, selector, count, timeout = TIMEOUT_MS) {
  await until(async () => (await page.$$(selector)).length === count, `${count} × ${selector}`, timeout);
}

/** Waits until the element has the focus. */
export async function expectFocused(page, selector, timeout = TIMEOUT_MS) {
  await until(
    async () => {
      const handle = await page.$(selector);
      return handle ? handle.evaluate((element) => element === element.ownerDocument.activeElement) : false;
    },
    `${selector} is focused`,
    timeout,
  );
}

/** A screenshot of every open page into `dir` (kept by pytest's tmp_path when a journey fails). */
export async function screenshots(browser, dir, label) {
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  let n = 0;
  for (const page of await browser.pages()) {
    n += 1;
    await page.screenshot({ path: join(dir, `${label}-${n}.png`) }).catch(() => undefined);
  }
}

/** Runs `journey(browser)` against a fresh Firefox, printing the result as the last line of JSON.
 *  A failure prints its stack and leaves screenshots in SCREENSHOT_DIR; the exit code says which. */
export async function run(journey, launchOptions = {}) {
  const started = Date.now();
  const browser = await launch(launchOptions);
  const version = await browser.version();
  let code = 0;
  try {
    const result = await journey(browser);
    console.log(JSON.stringify({ ok: true, browser: version, seconds: (Date.now() - started) / 1000, ...result }));
  } catch (error) {
    code = 1;
    for (let cause = error; cause; cause = cause instanceof Error ? cause.cause : undefined) {
      console.error(cause instanceof Error ? cause.stack : String(cause));
    }
    await screenshots(browser, process.env.SCREENSHOT_DIR, "failure");
  } finally {
    await browser.close();
  }
  process.exit(code);
}
