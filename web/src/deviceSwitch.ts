// A switch this device keeps (localStorage, "on"/"off"; absent means on), such as "Keyboard shortcuts" and
// "Enrich new links automatically". When storage is refused (private mode), the choice lasts for this page.

export interface DeviceSwitch {
  on(): boolean;
  set(on: boolean): void;
}

export function deviceSwitch(key: string): DeviceSwitch {
  let pageOnly: boolean | null = null;
  return {
    on() {
      if (pageOnly !== null) return pageOnly;
      try {
        return localStorage.getItem(key) !== "off";
      } catch {
        return true;
      }
    },
    set(on) {
      try {
        localStorage.setItem(key, on ? "on" : "off");
        pageOnly = null;
      } catch {
        pageOnly = on;
      }
    },
  };
}
