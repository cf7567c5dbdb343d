import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import { SHORTCUTS_KEY, isSingleKey, setShortcutsOn, shortcutAllowed, shortcutsOn } from "../src/shortcuts.ts";

const stored = new Map<string, string>();
let refuse = false;
Object.defineProperty(globalThis, "localStorage", {
  configurable: true,
  value: {
    getItem: (key: string) => {
      if (refuse) throw new Error("SecurityError");
      return stored.get(key) ?? null;
    },
    setItem: (key: string, value: string) => {
      if (refuse) throw new Error("QuotaExceededError");
      stored.set(key, value);
    },
  },
});

function press(key: string, mods: Partial<{ ctrlKey: boolean; metaKey: boolean; altKey: boolean }> = {}) {
  return { key, ctrlKey: false, metaKey: false, altKey: false, ...mods };
}

beforeEach(() => {
  refuse = false;
  stored.clear();
  setShortcutsOn(true);
  stored.clear();
});

test("a single key is one character without Ctrl, Alt or Meta; Shift makes another character", () => {
  for (const key of ["n", "/", "j", "?", "X", " ", "é"]) assert.equal(isSingleKey(press(key)), true, key);
  for (const key of ["Escape", "Enter", "ArrowDown", "Tab", "Home", "F1", "Shift"]) assert.equal(isSingleKey(press(key)), false, key);
  assert.equal(isSingleKey(press("k", { ctrlKey: true })), false);
  assert.equal(isSingleKey(press("k", { metaKey: true })), false);
  assert.equal(isSingleKey(press("k", { altKey: true })), false);
});

test("shortcuts are on until this device turns them off, and the choice is kept", () => {
  assert.equal(shortcutsOn(), true);
  assert.equal(shortcutAllowed(press("j")), true);
  setShortcutsOn(false);
  assert.equal(stored.get(SHORTCUTS_KEY), "off");
  assert.equal(shortcutsOn(), false);
  assert.equal(shortcutAllowed(press("j")), false);
  assert.equal(shortcutAllowed(press("?")), false);
  // Standard keys and combinations still work.
  assert.equal(shortcutAllowed(press("Escape")), true);
  assert.equal(shortcutAllowed(press("Enter")), true);
  assert.equal(shortcutAllowed(press("ArrowDown")), true);
  assert.equal(shortcutAllowed(press("k", { ctrlKey: true })), true);
  setShortcutsOn(true);
  assert.equal(stored.get(SHORTCUTS_KEY), "on");
  assert.equal(shortcutAllowed(press("j")), true);
});

test("storage that refuses keeps the choice for the page", () => {
  refuse = true;
  assert.equal(shortcutsOn(), true);
  setShortcutsOn(false);
  assert.equal(shortcutsOn(), false);
  assert.equal(shortcutAllowed(press("n")), false);
  setShortcutsOn(true);
  assert.equal(shortcutsOn(), true);
});
