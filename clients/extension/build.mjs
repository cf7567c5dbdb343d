// Builds dist/chromium and dist/firefox: the same bundles, one manifest per browser.
// Everything the extension runs is in the bundle (no remote code); nothing is fetched at build time.
import { build } from "esbuild";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { icon } from "./scripts/icon.mjs";
import { ICON_SIZES, manifest } from "./src/manifest.ts";

const root = dirname(fileURLToPath(import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
async function buildTarget(target) {
  const out = join(root, "dist", target);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, "icons"), { recursive: true });
  await build({
    entryPoints: ["background", "popup", "options", "highlighter"].map((name) => join(root, "src", `${name}.ts`)),
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
  writeFileSync(join(out, "manifest.json"), JSON.stringify(manifest(target, pkg.version), null, 2) + "\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const target of ["chromium", "firefox"]) await buildTarget(target);
  console.log("built dist/chromium and dist/firefox");
}
