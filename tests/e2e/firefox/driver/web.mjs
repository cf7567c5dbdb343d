// The web app's main journeys in Firefox: `node web.mjs JOURNEY` with GATEWAY_URL and PAIRING_CODE (a code of
// the library the test then reads through the API) in the environment. Prints the result as JSON.
import { all, click, expectCount, expectText, fill, named, role, run, until, within } from "./firefox.mjs";

const GATEWAY = process.env.GATEWAY_URL;
const CODE = process.env.PAIRING_CODE;
const BOOKMARKS = role("list", "Bookmarks");
const DETAILS = role("region", "Bookmark details");
const SYNC = role("status", "Sync");

/** The rows of the list "Bookmarks" whose text contains `title`. */
async function rows(page, title) {
  const found = [];
  for (const item of await all(page, within(BOOKMARKS, role("listitem")))) {
    if ((await item.evaluate((element) => element.textContent ?? "")).includes(title)) found.push(item);
    else await item.dispose();
  }
  return found;
}

async function expectRows(page, title, count) {
  await until(async () => (await rows(page, title)).length === count, `${count} row(s) showing "${title}"`);
}

async function rowButton(page, title, name) {
  const [row] = await until(async () => {
    const found = await rows(page, title);
    return found.length === 1 ? found : null;
  }, `one row showing "${title}"`);
  await (await row.waitForSelector(role("button", name))).click();
}

async function synced(page) {
  await until(async () => (await (await page.$(SYNC))?.evaluate((e) => e.textContent)) === "Synced", `the status says "Synced"`);
}

async function openLibrary(browser) {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.errors = errors;
  await page.goto(`${GATEWAY}/`);
  await page.waitForSelector(BOOKMARKS);
  await synced(page);
  return page;
}

/** Settings → "Join with a code": this browser joins the library the test holds a pairing code of. */
async function join(page) {
  await click(page, role("button", "Settings"));
  const settings = role("dialog", "Settings");
  await click(page, within(settings, named("Join with a code"))); // a <summary>
  await fill(page, within(settings, role("textbox", "Pairing code")), CODE.toLowerCase());
  await click(page, within(settings, role("button", "Join library")));
  await expectCount(page, settings, 0);
  await synced(page);
}

async function addLink(page, url) {
  await fill(page, role("textbox", "URL"), url);
  await click(page, role("button", "Save"));
}

/** Sign in with a code, add, edit in Details, search, delete and undo, delete and restore from the Trash. */
async function library(browser) {
  const page = await openLibrary(browser);
  await expectCount(page, within(BOOKMARKS, role("listitem")), 0);
  await join(page);

  const url = "https://firefox.example/articles/ownership?utm_source=feed";
  const title = "Ownership explained in Firefox";
  await addLink(page, url);
  await expectRows(page, "firefox.example", 1);
  await synced(page);

  await rowButton(page, "firefox.example", "Details");
  await fill(page, within(DETAILS, role("textbox", "Title")), title);
  await fill(page, within(DETAILS, role("textbox", "Notes")), "Borrowing with diagrams");
  await fill(page, within(DETAILS, role("textbox", "Tags")), "rust, learning");
  await click(page, within(DETAILS, role("textbox", "Title"))); // leaving Tags saves them
  await until(async () => {
    const [row] = await rows(page, title);
    return row && (await row.evaluate((e) => e.textContent)).includes("learning");
  }, "the row shows the new title and tag");
  await click(page, within(DETAILS, role("button", "Close details")));
  await synced(page);

  // The server's search finds it by a word of its notes and marks the word; a miss lists nothing.
  const search = role("searchbox", "Search");
  await fill(page, search, "diagrams");
  await until(async () => {
    const [row] = await rows(page, title);
    return row && (await row.$eval("mark", (mark) => mark.textContent).catch(() => null)) === "diagrams";
  }, "the search result with its snippet marked");
  await fill(page, search, "nothingmatchesthis");
  await expectCount(page, within(BOOKMARKS, role("listitem")), 0);
  await fill(page, search, "");
  await expectRows(page, title, 1);

  // Delete, then Undo from the notification.
  await rowButton(page, title, "Details");
  await click(page, within(DETAILS, role("button", "Delete")));
  await expectRows(page, title, 0);
  await click(page, role("button", "Undo"));
  await expectRows(page, title, 1);
  await synced(page);

  // Delete again, then restore from the Trash: back in the library through sync.
  await rowButton(page, title, "Details");
  await click(page, within(DETAILS, role("button", "Delete")));
  await expectRows(page, title, 0);
  await synced(page);
  const nav = role("navigation", "Library");
  await click(page, within(nav, role("link", "Trash")));
  const trash = within(role("list", "Trash"), role("listitem"));
  await until(async () => {
    const items = await all(page, trash);
    return items.length === 1 && (await items[0].evaluate((e) => e.textContent)).includes(title);
  }, "the trash lists the deleted bookmark");
  await click(page, within(role("list", "Trash"), role("button", "Restore")));
  await expectCount(page, trash, 0);
  await expectText(page, role("region", "Notifications"), `Restored “${title}”.`);
  // The link's name holds its count ("All 1"): the restored bookmark is back in it.
  await click(page, within(nav, role("link", "All 1")));
  await expectRows(page, title, 1);
  await synced(page);
  if (page.errors.length) throw new Error(`errors on the page: ${page.errors.join("; ")}`);
  return { url, title };
}

/** Writes while the browser is offline wait in the queue (and say so), and reach the server on reconnect;
 *  offline, a reload opens the app from its service worker. */
async function offline(browser) {
  const page = await openLibrary(browser);
  await join(page);
  const first = "https://firefox-offline.example/first";
  await addLink(page, first);
  await expectRows(page, "firefox-offline.example", 1);
  await synced(page);

  await page.setOfflineMode(true);
  await addLink(page, "https://firefox-offline.example/second");
  await expectRows(page, "firefox-offline.example", 2);
  const renamed = "Renamed while offline";
  await rowButton(page, "firefox-offline.example/first", "Details");
  await fill(page, within(DETAILS, role("textbox", "Title")), renamed);
  await click(page, within(DETAILS, role("button", "Close details")));
  await expectRows(page, renamed, 1);
  await expectText(page, SYNC, "Offline · ");
  await expectText(page, SYNC, "waiting");
  const [pending] = await rows(page, "firefox-offline.example/second");
  if (!(await pending.evaluate((e) => e.textContent)).includes("Not synced")) throw new Error("the offline row is not marked unsynced");

  await page.setOfflineMode(false);
  await synced(page);
  await until(async () => (await rows(page, "Not synced")).length === 0, "every row synced");

  // Offline again, a reload: the service worker serves the app, which shows the library it keeps. (A page
  // loaded under BiDi's offline emulation gets no "online" event when it ends, so the reconnect is above.)
  await page.setOfflineMode(true);
  await page.reload();
  await page.waitForSelector(BOOKMARKS);
  await expectRows(page, "firefox-offline.example", 2);
  await expectRows(page, renamed, 1);
  await expectText(page, SYNC, "Offline");
  if (page.errors.length) throw new Error(`errors on the page: ${page.errors.join("; ")}`);
  return { first, renamed, second: "https://firefox-offline.example/second" };
}

const JOURNEYS = { library, offline };
const journey = JOURNEYS[process.argv[2]];
if (!journey || !GATEWAY || !CODE) {
  console.error(`usage: GATEWAY_URL=… PAIRING_CODE=… node web.mjs ${Object.keys(JOURNEYS).join("|")}`);
  process.exit(2);
}
await run(journey);
