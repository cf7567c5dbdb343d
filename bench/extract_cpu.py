"""CPU per page of the enrichment extraction step (``enrichment.pipeline.extract_page``).

    .venv/bin/python bench/extract_cpu.py [--rounds 200]

Pages: a generated news-style page of about 40 KB (navigation, a 40-paragraph article, a sidebar,
comments, scripts, footer), plus the test fixtures of the enrichment service (small real-world shapes in
several languages). Each round extracts every page once; the figure is process CPU (user + system) per
page, over all rounds after one warm-up round. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from enrichment.pipeline import extract_page

FIXTURES = Path(__file__).resolve().parents[1] / "services" / "enrichment" / "tests" / "fixtures" / "pages"

_PARAGRAPH = (
    "<p>Researchers measured how heat pumps perform in buildings from the early twentieth century and "
    "found that most of them need only a few larger radiators, not a full renovation. The study "
    "followed {n} houses through two winters and compared their energy use with gas boilers.</p>"
)


def news_page() -> str:
    nav = "".join(f'<li><a href="/section/{i}">Section {i}</a></li>' for i in range(60))
    article = "".join(_PARAGRAPH.format(n=i) for i in range(40))
    sidebar = "".join(
        f'<div class="teaser"><a href="/a/{i}"><img src="/i/{i}.jpg">Teaser {i}</a></div>' for i in range(80)
    )
    comments = "".join(f'<div class="comment"><b>user{i}</b><p>Great article {i}!</p></div>' for i in range(60))
    scripts = "".join(f"<script>window.tracker{i} = {{id: {i}, payload: '{'x' * 400}'}};</script>" for i in range(30))
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Heat pumps in old buildings</title>'
        '<meta property="og:title" content="Heat pumps work in old buildings">'
        '<meta name="description" content="A two-winter study of heat pumps in old houses.">'
        f"{scripts}</head><body><header><nav><ul>{nav}</ul></nav></header>"
        f"<main><article><h1>Heat pumps in old buildings</h1>{article}</article>"
        f'<aside>{sidebar}</aside><section class="comments">{comments}</section></main>'
        "<!-- tracking pixel --><footer><p>Copyright</p></footer></body></html>"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    pages = [("news", news_page())] + [(p.stem, p.read_text()) for p in sorted(FIXTURES.glob("*.html"))]
    for _, html in pages:  # warm-up: imports, language models, caches
        extract_page(html, base_url="https://example.com/page")
    per_page: dict[str, float] = {}
    total_started = time.process_time()
    for name, html in pages:
        started = time.process_time()
        for _ in range(args.rounds):
            extract_page(html, base_url="https://example.com/page")
        per_page[name] = (time.process_time() - started) / args.rounds * 1000
    total = (time.process_time() - total_started) / (args.rounds * len(pages)) * 1000
    print(
        json.dumps(
            {
                "rounds": args.rounds,
                "news_page_bytes": len(pages[0][1].encode()),
                "cpu_ms_news_page": round(per_page["news"], 3),
                "cpu_ms_per_page_all": round(total, 3),
                "cpu_ms_by_page": {k: round(v, 3) for k, v in per_page.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
