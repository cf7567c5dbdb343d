// Builds dist/chromium and dist/firefox: the same bundles, one manifest per browser.
// Everything the extension runs is in the bundle (no remote code); nothing is fetched at build time.
import { build } from "esbuild";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { icon } from "./scripts/icon.mjs";

const root = dirname(fileURLToPath(import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const ICON_SIZES = [16, 32, 48, 128];

export function manifest(target) {
  const icons = Object.fromEntries(ICON_SIZES.map((size) => [String(size), `icons/${size}.png`]));
  const base = {
    manifest_version: 3,
    name: "Bookmarks",
    short_name: "Bookmarks",
    version: pkg.version,
    description: "Save pages to your bookmark library, with a copy of the page as you see it.",
    icons,
    action: { default_title: "Save to Bookmarks", default_popup: "popup.html", default_icon: icons },
    options_ui: { page: "options.html", open_in_tab: true },
    permissions: ["activeTab", "alarms", "contextMenus", "scripting", "storage"],
    optional_host_permissions: ["http://*/*", "https://*/*"],
    commands: {
      "save-page": { suggested_key: { default: "Alt+Shift+S" }, description: "Save this page" },
    },
    content_security_policy: { extension_pages: "script-src 'self'; object-src 'self'" },
  };
  if (target === "firefox") {
    return {
      ...base,
      background: { scripts: ["background.js"] },
      browser_specific_settings: { gecko: { id: "bookmarks-extension@bookmark-platform.example", strict_min_version: "128.0" } },
    };
  }
  return { ...base, background: { service_worker: "background.js" }, minimum_chrome_version: "116" };
}

async function buildTarget(target) {
  const out = join(root, "dist", target);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, "icons"), { recursive: true });
  await build({
    entryPoints: ["background", "popup", "options"].map((name) => join(root, "src", `${name}.ts`)),
    outdir: out,
    bundle: true,
    format: "iife",
    target: target === "firefox" ? "firefox128" : "chrome116",
    minify: false,
    sourcemap: false,
    legalComments: "none",
    logLevel: "warning",
  });
  for (const page of ["popup.html", "options.html", "common.css"]) cpSync(join(root, "src", "pages", page), join(out, page));
  for (const size of ICON_SIZES) writeFileSync(join(out, "icons", `${size}.png`), icon(size));
  writeFileSync(join(out, "manifest.json"), JSON.stringify(manifest(target), null, 2) + "\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const target of ["chromium", "firefox"]) await buildTarget(target);
  console.log("built dist/chromium and dist/firefox");
}
