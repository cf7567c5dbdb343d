import type { Segment } from "../snippet.ts";

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
    settings: "M12 8a4 4 0 1 0 0 8 4 4 0 0 0 0-8zM12 2v3M12 19v3M2 12h3M19 12h3M4.9 4.9l2.1 2.1M17 17l2.1 2.1M4.9 19.1 7 17M17 7l2.1-2.1",
    cloud: "M7 18h10a4 4 0 0 0 0-8 6 6 0 0 0-11.5 1.5A3.5 3.5 0 0 0 7 18z",
  };
  return (
    <svg class={`icon icon-${name}`} viewBox="0 0 24 24" aria-hidden="true" focusable="false">
      <path d={paths[name]} />
    </svg>
  );
}
