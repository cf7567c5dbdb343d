/** The manifest of each browser's build. Both share everything but how the background runs: a service
 * worker in Chromium, an event page's scripts in Firefox (which also needs an add-on id). */

export type Target = "chromium" | "firefox";

export const ICON_SIZES = [16, 32, 48, 128] as const;

/** The API permissions, each used by one feature (docs/extension.md says which). */
export const PERMISSIONS = ["activeTab", "alarms", "contextMenus", "scripting", "storage"];

export const FIREFOX_ID = "bookmarks-extension@bookmark-platform.example";

export function manifest(target: Target, version: string): Record<string, unknown> {
  const icons = Object.fromEntries(ICON_SIZES.map((size) => [String(size), `icons/${size}.png`]));
  const base = {
    manifest_version: 3,
    name: "Bookmarks",
    version,
    description: "Save pages to your bookmark library, with a copy of the page as you see it.",
    icons,
    action: { default_title: "Save to Bookmarks", default_popup: "popup.html", default_icon: icons },
    options_ui: { page: "options.html", open_in_tab: true },
    permissions: PERMISSIONS,
    // Asked for at sign-in, for the configured server's origin only.
    optional_host_permissions: ["http://*/*", "https://*/*"],
    commands: {
      "save-page": { suggested_key: { default: "Alt+Shift+S" }, description: "Save this page" },
      "highlight-selection": { suggested_key: { default: "Alt+Shift+H" }, description: "Highlight the selected text" },
    },
    content_security_policy: { extension_pages: "script-src 'self'; object-src 'self'" },
  };
  if (target === "firefox") {
    return {
      ...base,
      background: { scripts: ["background.js"] },
      browser_specific_settings: {
        gecko: {
          id: FIREFOX_ID,
          strict_min_version: "140.0",
          // What goes to the user's own server: the pages they save (URL, title, rendered HTML) and the
          // URL of each page they visit, looked up for the badge.
          data_collection_permissions: { required: ["browsingActivity", "websiteContent"] },
        },
        gecko_android: { strict_min_version: "142.0" },
      },
    };
  }
  return { ...base, background: { service_worker: "background.js" }, minimum_chrome_version: "116" };
}
