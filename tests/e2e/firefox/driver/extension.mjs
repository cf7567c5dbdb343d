// The browser extension's Firefox build in Firefox: `node extension.mjs` with EXTENSION_DIR (the built add-on),
// SERVER_URL, PAIRING_CODE, LOGIN_URL and PAGE_URL (a page shown only after LOGIN_URL set its cookie) in the
// environment. Installs the add-on, signs in on its options page with the code, saves the page from its popup.
import { click, expectText, fill, role, run, until } from "./firefox.mjs";

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return value;
};
const EXTENSION_DIR = env("EXTENSION_DIR");
const SERVER_URL = env("SERVER_URL");
const CODE = env("PAIRING_CODE");
const LOGIN_URL = env("LOGIN_URL");
const PAGE_URL = env("PAGE_URL");
const TAGS = "firefox, members";

// The add-on's id (browser_specific_settings.gecko.id) and the internal UUID its pages get here: Firefox picks
// a random one per profile unless this pref names it.
const ADDON_ID = "bookmarks-extension@bookmark-platform.example";
const ADDON_UUID = "5d0f6a3e-8c1b-4f7a-9e2d-3b6c1a0f9e41";
const origin = `moz-extension://${ADDON_UUID}`;

/** An extension page in a new tab. BiDi's navigate waits for it; puppeteer's goto would not see an extension
 *  page's load (it happens in the extension process), so the page is driven by its browsing context. */
async function extensionPage(browser, path) {
  const page = await browser.newPage();
  await page.mainFrame().browsingContext.navigate(`${origin}/${path}`, "interactive");
  await until(() => page.evaluate(() => document.readyState === "complete" && location.protocol === "moz-extension:"), `${path} loaded`);
  return page;
}

async function journey(browser) {
  const installed = await browser.installExtension(EXTENSION_DIR);
  if (installed !== ADDON_ID) throw new Error(`installed ${installed}, expected ${ADDON_ID}`);

  // Sign in with a pairing code, as a person does on the options page (the server's permission is asked
  // inside the click; the profile grants it without the prompt, which automation cannot answer).
  const options = await extensionPage(browser, "options.html");
  await fill(options, role("textbox", "Server URL"), SERVER_URL);
  await fill(options, role("textbox", "Pairing code"), CODE);
  await click(options, role("button", "Sign in with code"));
  await expectText(options, role("status"), "You're signed in");

  // The page behind a login, in a tab of its own.
  const article = await browser.newPage();
  await article.goto(LOGIN_URL);
  await article.goto(PAGE_URL);
  const tabId = await until(
    // Every tab, then by URL: a `url` query (a match pattern) found no tab of a page on a port here.
    () => options.evaluate((url) => browser.tabs.query({}).then((tabs) => tabs.find((tab) => tab.url === url)?.id), PAGE_URL),
    "the page's tab",
  );

  // The popup for that tab (automation cannot click the toolbar button): the same page and code.
  const popup = await extensionPage(browser, `popup.html?tab=${tabId}`);
  await fill(popup, role("textbox", "Tags"), TAGS);
  await click(popup, role("button", "Save page"));
  await expectText(popup, role("status"), "Saved with a copy of the page");
  return { tags: TAGS.split(", "), addon: installed };
}

await run(journey, {
  // --remote-allow-system-access: BiDi may open moz-extension:// pages (refused otherwise).
  args: ["--remote-allow-system-access"],
  prefs: {
    "extensions.webextensions.uuids": JSON.stringify({ [ADDON_ID]: ADDON_UUID }),
    // permissions.request() inside a click is granted without the browser's prompt.
    "extensions.webextOptionalPermissionPrompts": false,
  },
});
