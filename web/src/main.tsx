// Entry point: open the device's database, start (or resume) the session, render, register the worker.

import { render } from "preact";
import { Device } from "./app.ts";
import { urlProblem } from "./urls.ts";
import { App } from "./ui/App.tsx";
import { applyTheme } from "./ui/theme.ts";

applyTheme();
matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => applyTheme());

/** A link shared to the installed app (Web Share Target) arrives as ?url=…, ?text=… or ?title=…. */
async function saveShared(device: Device): Promise<void> {
  const params = new URLSearchParams(location.search);
  if (!params.size) return;
  history.replaceState(null, "", `/${location.hash}`);
  const text = `${params.get("url") ?? ""} ${params.get("text") ?? ""}`;
  const candidate = text.split(/\s+/).find((part) => part && urlProblem(part) === null);
  if (!candidate) return;
  const existing = device.store.findByUrl(candidate);
  if (existing) {
    device.toast("Already saved.");
    return;
  }
  const title = params.get("title")?.trim();
  await device.add(candidate, title ? { title: title.slice(0, 1000) } : {});
  device.toast("Saved the shared link.");
}

async function boot(): Promise<void> {
  const root = document.getElementById("root");
  if (!root) return;
  const device = await Device.open();
  try {
    await device.begin();
  } catch {
    root.textContent = "";
    const p = document.createElement("p");
    p.className = "boot";
    p.textContent = "Can't reach the server to start your library. Check your connection and reload.";
    root.appendChild(p);
    return;
  }
  root.textContent = "";
  render(<App device={device} />, root);
  await saveShared(device);
  (window as Window & { bookmarksDevice?: Device }).bookmarksDevice = device;
}

void boot();

if ("serviceWorker" in navigator) {
  window.addEventListener("load", () => {
    navigator.serviceWorker.register("/app/sw.js", { scope: "/" }).catch(() => undefined);
  });
}
