// Builds web/dist: the shell (index.html), hashed scripts and styles under assets/, the service worker
// (sw.js, told which files to keep offline), the manifest and the icons. Run by `make web`.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, "dist");
rmSync(dist, { recursive: true, force: true });
mkdirSync(join(dist, "assets"), { recursive: true });

const common = { bundle: true, minify: true, target: ["es2022", "chrome110", "firefox115"], legalComments: "none" };
const app = await build({
  ...common,
  entryPoints: { app: join(root, "src/main.tsx"), styles: join(root, "src/styles.css"), reader: join(root, "src/reader.css") },
  outdir: join(dist, "assets"),
  entryNames: "[name]-[hash]",
  format: "esm",
  jsx: "automatic",
  jsxImportSource: "preact",
  metafile: true,
});
const outputs = Object.keys(app.metafile.outputs).map((p) => p.slice(p.indexOf("assets/")));
const pick = (prefix, ext) => outputs.find((p) => p.startsWith(`assets/${prefix}-`) && p.endsWith(ext));
const script = pick("app", ".js");
const styles = pick("styles", ".css");
const reader = pick("reader", ".css");

cpSync(join(root, "public"), dist, { recursive: true });
const shell = readFileSync(join(root, "src/index.html"), "utf8")
  .replace("__SCRIPT__", `/app/${script}`)
  .replace("__STYLES__", `/app/${styles}`)
  .replace("__READER__", `/app/${reader}`);
writeFileSync(join(dist, "index.html"), shell);

// The worker caches exactly this build; its version changes whenever any file does.
const offline = ["/", ...outputs.map((p) => `/app/${p}`), "/app/manifest.webmanifest", "/app/icon.svg"];
const version = createHash("sha256").update(shell).update(offline.join("\n")).digest("hex").slice(0, 12);
await build({
  ...common,
  entryPoints: [join(root, "src/sw.ts")],
  outfile: join(dist, "sw.js"),
  format: "iife",
  define: { __OFFLINE_FILES__: JSON.stringify(offline), __BUILD_VERSION__: JSON.stringify(version) },
});
console.log(`web/dist built: ${script}, ${styles} (version ${version})`);
