// Search snippets arrive as text with <mark>…</mark> around matches and every other character
// HTML-escaped. They are never inserted as HTML: only <mark> is recognised and every other piece is
// decoded to plain text, so a snippet can never carry markup of its own.

export interface Segment {
  text: string;
  mark: boolean;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", "#39": "'", "#x27": "'" };

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, name: string) => {
    const lower = name.toLowerCase();
    if (lower in ENTITIES) return ENTITIES[lower] ?? whole;
    const code = lower.startsWith("#x") ? Number.parseInt(lower.slice(2), 16) : lower.startsWith("#") ? Number(lower.slice(1)) : NaN;
    return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

export function parseSnippet(snippet: string): Segment[] {
  const out: Segment[] = [];
  let mark = false;
  for (const piece of snippet.split(/(<mark>|<\/mark>)/)) {
    if (piece === "<mark>") mark = true;
    else if (piece === "</mark>") mark = false;
    else if (piece) out.push({ text: decodeEntities(piece), mark });
  }
  return out;
}

/** Local highlighting: ``text`` split around case-insensitive occurrences of ``words``. */
export function highlight(text: string, words: readonly string[]): Segment[] {
  const usable = words.map((w) => w.trim()).filter(Boolean);
  if (!usable.length) return [{ text, mark: false }];
  const escaped = usable.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const out: Segment[] = [];
  for (const piece of text.split(new RegExp(`(${escaped.join("|")})`, "i"))) {
    if (piece) out.push({ text: piece, mark: usable.some((w) => w.toLowerCase() === piece.toLowerCase()) });
  }
  return out;
}
