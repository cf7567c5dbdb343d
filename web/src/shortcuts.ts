// Single-key shortcuts (n, /, j, k, x, f, e, r, o, ?, h in the Reader) and this device's choice to turn
// them off (WCAG 2.1.4): off, a key press of one character does nothing, while Escape, Enter, the arrow
// keys and combinations with Ctrl, Alt or Meta keep working.

import { deviceSwitch } from "./deviceSwitch.ts";

/** This device's choice (localStorage): absent means on. */
export const SHORTCUTS_KEY = "keyboard-shortcuts";

const choice = deviceSwitch(SHORTCUTS_KEY);

export function shortcutsOn(): boolean {
  return choice.on();
}

export function setShortcutsOn(on: boolean): void {
  choice.set(on);
}

interface KeyPress {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  altKey: boolean;
}

/** A press of one printable character without Ctrl, Alt or Meta (Shift is part of the character: "?"). */
export function isSingleKey(event: KeyPress): boolean {
  return [...event.key].length === 1 && !event.ctrlKey && !event.metaKey && !event.altKey;
}

/** Whether the app may act on this key press as a shortcut: any key but a single character, which only
 * while this device's shortcuts are on. */
export function shortcutAllowed(event: KeyPress): boolean {
  return !isSingleKey(event) || shortcutsOn();
}
