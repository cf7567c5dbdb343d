"""Just enough PromQL lexing to list the series names and label names an expression uses.

Not a parser: it knows selectors (`name{matchers}`), function calls (`ident(`), grouping clauses
(`by (...)`, `without`, `on`, `ignoring`, `group_left`, `group_right`), ranges and subqueries
(`[...]`), strings, numbers, durations and Grafana variables (`$__rate_interval`, `${x}`), which is
all that the dashboard and alert expressions contain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"})
SET_OPERATORS = frozenset({"and", "or", "unless", "atan2"})
GROUPING = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
# Aggregation operators may be followed by a grouping clause instead of "(": `sum by (x) (...)`.
AGGREGATIONS = frozenset(
    {
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    }
)

_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_NUMBER = re.compile(r"(?:0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?|\.[0-9]+)(?:[a-zA-Z]+[0-9a-zA-Z]*)*")
_VARIABLE = re.compile(r"\$(?:\{[^}]*\}|[a-zA-Z_][a-zA-Z0-9_]*)")
_MATCHER = re.compile(r'^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*(".*"|\'.*\'|`.*`)\s*$', re.S)


@dataclass
class Selector:
    name: str | None
    matchers: list[tuple[str, str, str]] = field(default_factory=list)  # (label, op, value)


@dataclass
class Usage:
    selectors: list[Selector] = field(default_factory=list)
    grouping_labels: set[str] = field(default_factory=set)


class PromQLError(ValueError):
    pass


def _read_string(expr: str, i: int) -> int:
    """Index just past the string literal starting at expr[i]."""
    quote = expr[i]
    j = i + 1
    while j < len(expr):
        if expr[j] == "\\" and quote != "`":
            j += 2
            continue
        if expr[j] == quote:
            return j + 1
        j += 1
    raise PromQLError(f"unterminated string at {i}: {expr!r}")


def _read_block(expr: str, i: int, close: str) -> int:
    """Index just past the bracketed block starting at expr[i] (strings respected)."""
    j = i + 1
    while j < len(expr):
        c = expr[j]
        if c in "\"'`":
            j = _read_string(expr, j)
            continue
        if c == close:
            return j + 1
        j += 1
    raise PromQLError(f"unterminated {expr[i]!r} at {i}: {expr!r}")


def _split_matchers(body: str) -> list[str]:
    parts, start, j = [], 0, 0
    while j < len(body):
        if body[j] in "\"'`":
            j = _read_string(body, j)
            continue
        if body[j] == ",":
            parts.append(body[start:j])
            start = j + 1
        j += 1
    parts.append(body[start:])
    return [p for p in parts if p.strip()]


def _tokens(expr: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(expr):
        c = expr[i]
        if c.isspace():
            i += 1
        elif c == "#":  # comment to end of line
            while i < len(expr) and expr[i] != "\n":
                i += 1
        elif c in "\"'`":
            i = _read_string(expr, i)
            out.append(("string", ""))
        elif c == "$":
            m = _VARIABLE.match(expr, i)
            if not m:
                raise PromQLError(f"bad variable at {i}: {expr!r}")
            out.append(("variable", m.group()))
            i = m.end()
        elif c == "{":
            j = _read_block(expr, i, "}")
            out.append(("matchers", expr[i + 1 : j - 1]))
            i = j
        elif c == "[":
            i = _read_block(expr, i, "]")
            out.append(("range", ""))
        elif c.isdigit() or (c == "." and i + 1 < len(expr) and expr[i + 1].isdigit()):
            m = _NUMBER.match(expr, i)
            assert m
            out.append(("number", m.group()))
            i = m.end()
        elif _IDENT.match(expr, i):
            m = _IDENT.match(expr, i)
            assert m
            out.append(("ident", m.group()))
            i = m.end()
        elif c in "()":
            out.append((c, c))
            i += 1
        else:  # operators and commas
            out.append(("op", c))
            i += 1
    return out


def analyse(expr: str) -> Usage:
    """Series selectors and grouping labels used by a PromQL expression."""
    usage = Usage()
    toks = _tokens(expr)
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else ("", "")
        if kind == "ident" and text.lower() in GROUPING and nxt[0] == "(":
            j = i + 2
            while j < len(toks) and toks[j][0] != ")":
                if toks[j][0] == "ident":
                    usage.grouping_labels.add(toks[j][1])
                j += 1
            i = j + 1
            continue
        if kind == "ident" and (text.lower() in KEYWORDS or text.lower() in SET_OPERATORS):
            i += 1
            continue
        if kind == "ident" and (nxt[0] == "(" or text.lower() in AGGREGATIONS):  # function or aggregation
            i += 1
            continue
        if kind == "ident" or kind == "matchers":
            name = text if kind == "ident" else None
            body = nxt[1] if kind == "ident" and nxt[0] == "matchers" else (text if kind == "matchers" else None)
            selector = Selector(name)
            for part in _split_matchers(body or ""):
                m = _MATCHER.match(part)
                if not m:
                    raise PromQLError(f"bad matcher {part!r} in {expr!r}")
                selector.matchers.append((m.group(1), m.group(2), m.group(3)[1:-1]))
            if name is None:
                names = [v for label, op, v in selector.matchers if label == "__name__" and op == "="]
                selector.name = names[0] if names else None
            usage.selectors.append(selector)
            i += 2 if (kind == "ident" and nxt[0] == "matchers") else 1
            continue
        i += 1
    return usage
