import { useEffect, useState } from "preact/hooks";
import type { Segment } from "../snippet.ts";

/** Whether the browser says it is online, re-rendering when that changes. */
export function useOnline(): boolean {
  const [online, setOnline] = useState(navigator.onLine);
  useEffect(() => {
    const on = () => setOnline(true);
    const off = () => setOnline(false);
    window.addEventListener("online", on);
    window.addEventListener("offline", off);
    return () => {
      window.removeEventListener("online", on);
      window.removeEventListener("offline", off);
    };
  }, []);
  return online;
}

export function Segments({ segments }: { segments: Segment[] }) {
  return <>{segments.map((s, i) => (s.mark ? <mark key={i}>{s.text}</mark> : <span key={i}>{s.text}</span>))}</>;
}

export function plural(n: number, one: string, many: string): string {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}

export function Icon({ name }: { name: "details" | "star" | "star-filled" | "archive" | "close" | "menu" | "settings" | "cloud" }) {
  const paths: Record<string, string> = {
    details: "M4 6h16M4 12h16M4 18h10",
    star: "M12 3l2.8 5.9 6.2.9-4.5 4.4 1.1 6.3L12 17.6 6.4 20.5l1.1-6.3L3 9.8l6.2-.9z",
    "star-filled": "M12 3l2.8 5.9 6.2.9-4.5 4.4 1.1 6.3L12 17.6 6.4 20.5l1.1-6.3L3 9.8l6.2-.9z",
    archive: "M3 5h18v4H3zM5 9v10h14V9M10 13h4",
    close: "M6 6l12 12M18 6L6 18",
    menu: "M4 6h16M4 12h16M4 18h16",
    settings: "M4 6h10M18 6h2M4 12h4M12 12h8M4 18h12M20 18h0M16 4v4M10 10v4M18 16v4",
    cloud: "M7 18h10a4 4 0 0 0 0-8 6 6 0 0 0-11.5 1.5A3.5 3.5 0 0 0 7 18z",
  };
  return (
    <svg class={`icon icon-${name}`} viewBox="0 0 24 24" aria-hidden="true" focusable="false">
      <path d={paths[name]} />
    </svg>
  );
}
