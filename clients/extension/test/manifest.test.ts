import assert from "node:assert/strict";
import { test } from "node:test";

import { FIREFOX_ID, manifest } from "../src/manifest.ts";

test("both builds ask for the same minimal permissions and no host permission up front", () => {
  for (const target of ["chromium", "firefox"] as const) {
    const m = manifest(target, "1.0.0");
    assert.equal(m["manifest_version"], 3);
    assert.deepEqual(m["permissions"], ["activeTab", "alarms", "contextMenus", "scripting", "storage"]);
    assert.equal(m["host_permissions"], undefined);
    assert.deepEqual(m["optional_host_permissions"], ["http://*/*", "https://*/*"]);
    assert.match(String((m["content_security_policy"] as Record<string, string>)["extension_pages"]), /^script-src 'self';/);
  }
});

test("Chromium runs the background as a service worker, Firefox as scripts with an add-on id", () => {
  assert.deepEqual(manifest("chromium", "1.0.0")["background"], { service_worker: "background.js" });
  const firefox = manifest("firefox", "1.0.0");
  assert.deepEqual(firefox["background"], { scripts: ["background.js"] });
  assert.equal((firefox["browser_specific_settings"] as { gecko: { id: string } }).gecko.id, FIREFOX_ID);
});

test("both builds declare the two shortcuts: save this page and highlight the selection", () => {
  for (const target of ["chromium", "firefox"] as const) {
    const commands = manifest(target, "1.0.0")["commands"] as Record<string, { suggested_key: { default: string } }>;
    assert.deepEqual(
      Object.fromEntries(Object.entries(commands).map(([name, c]) => [name, c.suggested_key.default])),
      { "save-page": "Alt+Shift+S", "highlight-selection": "Alt+Shift+H" },
    );
  }
});
