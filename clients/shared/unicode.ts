// Python's Unicode string rules, for the server's rules run in the clients (tags.ts, urls.ts, query.ts):
// what str.isspace, str.strip, str.split, str.casefold and str.isalnum mean on the server (Python 3.11,
// Unicode 14), written with JavaScript's own tables plus the few places where they differ. Characters
// assigned after Unicode 14 may fold differently here than on the server (a known gap, decision 0146).
//
// This module imports nothing, so it builds and type-checks from either client's tree.

// str.isspace: JavaScript's \s without U+FEFF, plus U+001C-U+001F and U+0085.
const SPACE_CLASS = "\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const SPACE = new RegExp(`^[${SPACE_CLASS}]$`);
const SPACES = new RegExp(`[${SPACE_CLASS}]+`);
const EDGE_SPACES = new RegExp(`^[${SPACE_CLASS}]+|[${SPACE_CLASS}]+$`, "g");

/** Python's ``ch.isspace()`` for one character. */
export function isSpace(ch: string): boolean {
  return SPACE.test(ch);
}

/** Python's ``text.strip()``. */
export function strip(text: string): string {
  return text.replace(EDGE_SPACES, "");
}

/** Python's ``text.split()``: the non-empty runs between whitespace. */
export function splitWords(text: string): string[] {
  return text.split(SPACES).filter(Boolean);
}

/** Python's ``text.isalnum()`` holds for some character (letters and numbers: \p{L} and \p{N}). */
export function hasWordChars(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text);
}

/** Python's ``len(text)``: code points, never UTF-16 units. */
export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

// Where lower-upper-lower case mapping differs from Unicode full case folding: dotless ı folds to itself, and
// Cherokee folds to its capital letters.
const SPECIAL_FOLDS = /[\u0131\u13a0-\u13f5\u13f8-\u13fd\uab70-\uabbf]/;

function foldChar(ch: string): string {
  if (ch === "\u0131") return ch;
  if (SPECIAL_FOLDS.test(ch)) return ch.toUpperCase();
  return ch.toLowerCase().toUpperCase().toLowerCase().replace("\u03c2", "\u03c3");
}

/** Python's ``text.casefold()``: full case folding (``Straße`` → ``strasse``, ``ς`` → ``σ``). */
export function caseFold(text: string): string {
  if (/^[\x00-\x7f]*$/.test(text)) return text.toLowerCase();
  if (SPECIAL_FOLDS.test(text)) {
    let out = "";
    for (const ch of text) out += foldChar(ch);
    return out;
  }
  // Lower case maps a word-final capital sigma to ς, which folds to σ like every other sigma.
  return text.toLowerCase().toUpperCase().toLowerCase().replaceAll("\u03c2", "\u03c3");
}

// Characters of canonical combining class other than 0 (Python's unicodedata.combining), the marks the
// search folding drops; services/bookmarks/tests/unit/test_shared_rule_vectors.py holds this list equal
// to the server's.
// MARKS-BEGIN
const MARKS = /[\u{300}-\u{34e}\u{350}-\u{36f}\u{483}-\u{487}\u{591}-\u{5bd}\u{5bf}\u{5c1}-\u{5c2}\u{5c4}-\u{5c5}\u{5c7}\u{610}-\u{61a}\u{64b}-\u{65f}\u{670}\u{6d6}-\u{6dc}\u{6df}-\u{6e4}\u{6e7}-\u{6e8}\u{6ea}-\u{6ed}\u{711}\u{730}-\u{74a}\u{7eb}-\u{7f3}\u{7fd}\u{816}-\u{819}\u{81b}-\u{823}\u{825}-\u{827}\u{829}-\u{82d}\u{859}-\u{85b}\u{898}-\u{89f}\u{8ca}-\u{8e1}\u{8e3}-\u{8ff}\u{93c}\u{94d}\u{951}-\u{954}\u{9bc}\u{9cd}\u{9fe}\u{a3c}\u{a4d}\u{abc}\u{acd}\u{b3c}\u{b4d}\u{bcd}\u{c3c}\u{c4d}\u{c55}-\u{c56}\u{cbc}\u{ccd}\u{d3b}-\u{d3c}\u{d4d}\u{dca}\u{e38}-\u{e3a}\u{e48}-\u{e4b}\u{eb8}-\u{eba}\u{ec8}-\u{ecb}\u{f18}-\u{f19}\u{f35}\u{f37}\u{f39}\u{f71}-\u{f72}\u{f74}\u{f7a}-\u{f7d}\u{f80}\u{f82}-\u{f84}\u{f86}-\u{f87}\u{fc6}\u{1037}\u{1039}-\u{103a}\u{108d}\u{135d}-\u{135f}\u{1714}-\u{1715}\u{1734}\u{17d2}\u{17dd}\u{18a9}\u{1939}-\u{193b}\u{1a17}-\u{1a18}\u{1a60}\u{1a75}-\u{1a7c}\u{1a7f}\u{1ab0}-\u{1abd}\u{1abf}-\u{1ace}\u{1b34}\u{1b44}\u{1b6b}-\u{1b73}\u{1baa}-\u{1bab}\u{1be6}\u{1bf2}-\u{1bf3}\u{1c37}\u{1cd0}-\u{1cd2}\u{1cd4}-\u{1ce0}\u{1ce2}-\u{1ce8}\u{1ced}\u{1cf4}\u{1cf8}-\u{1cf9}\u{1dc0}-\u{1dff}\u{20d0}-\u{20dc}\u{20e1}\u{20e5}-\u{20f0}\u{2cef}-\u{2cf1}\u{2d7f}\u{2de0}-\u{2dff}\u{302a}-\u{302f}\u{3099}-\u{309a}\u{a66f}\u{a674}-\u{a67d}\u{a69e}-\u{a69f}\u{a6f0}-\u{a6f1}\u{a806}\u{a82c}\u{a8c4}\u{a8e0}-\u{a8f1}\u{a92b}-\u{a92d}\u{a953}\u{a9b3}\u{a9c0}\u{aab0}\u{aab2}-\u{aab4}\u{aab7}-\u{aab8}\u{aabe}-\u{aabf}\u{aac1}\u{aaf6}\u{abed}\u{fb1e}\u{fe20}-\u{fe2f}\u{101fd}\u{102e0}\u{10376}-\u{1037a}\u{10a0d}\u{10a0f}\u{10a38}-\u{10a3a}\u{10a3f}\u{10ae5}-\u{10ae6}\u{10d24}-\u{10d27}\u{10eab}-\u{10eac}\u{10f46}-\u{10f50}\u{10f82}-\u{10f85}\u{11046}\u{11070}\u{1107f}\u{110b9}-\u{110ba}\u{11100}-\u{11102}\u{11133}-\u{11134}\u{11173}\u{111c0}\u{111ca}\u{11235}-\u{11236}\u{112e9}-\u{112ea}\u{1133b}-\u{1133c}\u{1134d}\u{11366}-\u{1136c}\u{11370}-\u{11374}\u{11442}\u{11446}\u{1145e}\u{114c2}-\u{114c3}\u{115bf}-\u{115c0}\u{1163f}\u{116b6}-\u{116b7}\u{1172b}\u{11839}-\u{1183a}\u{1193d}-\u{1193e}\u{11943}\u{119e0}\u{11a34}\u{11a47}\u{11a99}\u{11c3f}\u{11d42}\u{11d44}-\u{11d45}\u{11d97}\u{16af0}-\u{16af4}\u{16b30}-\u{16b36}\u{16ff0}-\u{16ff1}\u{1bc9e}\u{1d165}-\u{1d169}\u{1d16d}-\u{1d172}\u{1d17b}-\u{1d182}\u{1d185}-\u{1d18b}\u{1d1aa}-\u{1d1ad}\u{1d242}-\u{1d244}\u{1e000}-\u{1e006}\u{1e008}-\u{1e018}\u{1e01b}-\u{1e021}\u{1e023}-\u{1e024}\u{1e026}-\u{1e02a}\u{1e130}-\u{1e136}\u{1e2ae}\u{1e2ec}-\u{1e2ef}\u{1e8d0}-\u{1e8d6}\u{1e944}-\u{1e94a}]/gu;
// MARKS-END

/** The server's search folding (bookmarks.search.folding.fold): NFKD, case fold, combining marks dropped. */
export function fold(text: string): string {
  const folded = caseFold(text.normalize("NFKD"));
  return /^[\x00-\x7f]*$/.test(folded) ? folded : folded.replace(MARKS, "");
}
