// The shared anchoring rule (clients/shared/anchoring.ts) with approx-string-match as its approximate search.

import search from "approx-string-match";
import { type Anchor, type Selector, anchor as anchorWith, anchorAll as anchorAllWith } from "../../../../clients/shared/anchoring.ts";

export { type Anchor, type Selector, type TextSelector, MAX_QUOTE, codePointLength, selectorAt } from "../../../../clients/shared/anchoring.ts";
export { TextMap, unwrapAll, wrapText } from "../../../../clients/shared/textRanges.ts";

export function anchor(text: string, selector: Selector): Anchor {
  return anchorWith(search, text, selector);
}

export function anchorAll(text: string, selectors: readonly Selector[]): Anchor[] {
  return anchorAllWith(search, text, selectors);
}
