// Code point offsets in the text of a root element (the concatenation of its text nodes, its
// textContent) and DOM positions, both ways: to draw a highlight's marks and to make a selector from what
// a person selected. Marks are wrapped around one text node's part at a time, so the page's elements are
// never split or moved; removing them gives back the same text nodes' text.

import { codePointLength, codePointOffset, utf16Index } from "./anchoring.ts";

const TEXT_NODE = 3;

/** One text node's part, in UTF-16 indices of its data. */
export interface TextPiece {
  node: Text;
  from: number;
  to: number;
}

/** The text nodes under ``root``, in document order. */
export function textNodes(root: Node): Text[] {
  const out: Text[] = [];
  const walk = (node: Node): void => {
    for (let child = node.firstChild; child; child = child.nextSibling) {
      if (child.nodeType === TEXT_NODE) out.push(child as Text);
      else walk(child);
    }
  };
  walk(root);
  return out;
}

/** The text of ``root`` with each text node's place in it, in code points. */
export class TextMap {
  readonly text: string;
  private readonly nodes: Text[];
  private readonly starts: number[];
  readonly length: number;
  readonly root: Node;

  constructor(root: Node) {
    this.root = root;
    this.nodes = textNodes(root);
    this.starts = [];
    let at = 0;
    const parts: string[] = [];
    for (const node of this.nodes) {
      this.starts.push(at);
      at += codePointLength(node.data);
      parts.push(node.data);
    }
    this.length = at;
    this.text = parts.join("");
  }

  /** The text nodes' parts covering code points ``start`` to ``end`` (exclusive), in order. */
  pieces(start: number, end: number): TextPiece[] {
    const out: TextPiece[] = [];
    this.nodes.forEach((node, i) => {
      const nodeStart = this.starts[i] as number;
      const nodeEnd = (this.starts[i + 1] ?? this.length) as number;
      const a = Math.max(start, nodeStart);
      const b = Math.min(end, nodeEnd);
      if (a >= b) return;
      out.push({ node, from: utf16Index(node.data, a - nodeStart), to: utf16Index(node.data, b - nodeStart) });
    });
    return out;
  }

  /** A DOM Range over code points ``start`` to ``end``; null when it covers no text. */
  range(start: number, end: number): Range | null {
    const pieces = this.pieces(start, end);
    const first = pieces[0];
    const last = pieces[pieces.length - 1];
    if (!first || !last) return null;
    const range = (this.root.ownerDocument ?? (this.root as Document)).createRange();
    range.setStart(first.node, first.from);
    range.setEnd(last.node, last.to);
    return range;
  }

  /**
   * The code point offset of the DOM position (``container``, ``offset``): in a text node, a UTF-16
   * index of its data; in an element, a child index. Null when the position is not under the root.
   */
  offsetOf(container: Node, offset: number): number | null {
    if (container.nodeType === TEXT_NODE) {
      const i = this.nodes.indexOf(container as Text);
      return i < 0 ? null : (this.starts[i] as number) + codePointOffset((container as Text).data, offset);
    }
    let count = 0;
    let found: number | null = null;
    const walk = (node: Node): boolean => {
      let index = 0;
      for (let child = node.firstChild; child; child = child.nextSibling, index++) {
        if (node === container && index === offset) {
          found = count;
          return true;
        }
        if (child.nodeType === TEXT_NODE) count += codePointLength((child as Text).data);
        else if (walk(child)) return true;
      }
      if (node === container) {
        found = count;
        return true;
      }
      return false;
    };
    walk(this.root);
    return found;
  }

  /** The code point offsets of ``range`` clipped to the root; null when it covers none of its text. */
  offsetsOf(range: AbstractRange): [number, number] | null {
    const inside = (node: Node) => node === this.root || this.root.contains(node);
    const start = inside(range.startContainer) ? this.offsetOf(range.startContainer, range.startOffset) : 0;
    const end = inside(range.endContainer) ? this.offsetOf(range.endContainer, range.endOffset) : this.length;
    if (start === null || end === null || start >= end) return null;
    return [start, end];
  }
}

/**
 * Wraps each text node part of code points ``start`` to ``end`` of ``map`` in an element made by
 * ``make`` (called once per part, in order); returns them. The map is stale afterwards: text nodes split.
 */
export function wrapText(map: TextMap, start: number, end: number, make: (index: number) => HTMLElement): HTMLElement[] {
  return map.pieces(start, end).map((piece, index) => {
    let node = piece.node;
    if (piece.to < node.data.length) node.splitText(piece.to);
    if (piece.from > 0) node = node.splitText(piece.from);
    const wrapper = make(index);
    node.parentNode?.insertBefore(wrapper, node);
    wrapper.appendChild(node);
    return wrapper;
  });
}

/** Removes the wrappers ``selector`` finds under ``root``, keeping their content; text nodes merge again. */
export function unwrapAll(root: Element, selector: string): void {
  for (const wrapper of Array.from(root.querySelectorAll(selector))) {
    const parent = wrapper.parentNode;
    if (!parent) continue;
    while (wrapper.firstChild) parent.insertBefore(wrapper.firstChild, wrapper);
    parent.removeChild(wrapper);
  }
  root.normalize();
}
