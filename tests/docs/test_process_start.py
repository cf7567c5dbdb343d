"""ARCHITECTURE.md, Layout: every process starts through common.process.run_process (decision 0152), and
every lifespan runs common.runtime's backbone."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAINS = {
    "auth": "services/auth/src/auth/__main__.py",
    "bookmarks": "services/bookmarks/src/bookmarks/__main__.py",
    "enrichment": "services/enrichment/src/enrichment/__main__.py",
    "enrichment.worker": "services/enrichment/src/enrichment/worker/__main__.py",
    "gateway": "services/gateway/src/gateway/__main__.py",
}
LIFESPANS = {
    "auth": "services/auth/src/auth/main.py",
    "bookmarks": "services/bookmarks/src/bookmarks/main.py",
    "enrichment": "services/enrichment/src/enrichment/main.py",
    "enrichment.worker": "services/enrichment/src/enrichment/worker/app.py",
    "gateway": "services/gateway/src/gateway/main.py",
}


def test_every_process_is_listed() -> None:
    found = {str(p.relative_to(ROOT)) for p in ROOT.glob("services/*/src/**/__main__.py")}
    assert found == set(MAINS.values())


@pytest.mark.parametrize("process", sorted(MAINS))
def test_every_main_is_the_one_skeleton(process: str) -> None:
    text = (ROOT / MAINS[process]).read_text(encoding="utf-8")
    assert "run_process(" in text
    for own_start in ("setup_logging", "serve(", "uvicorn"):
        assert own_start not in text, f"{process}'s __main__ starts with {own_start} of its own"


@pytest.mark.parametrize("process", sorted(LIFESPANS))
def test_every_lifespan_runs_the_backbone(process: str) -> None:
    text = (ROOT / LIFESPANS[process]).read_text(encoding="utf-8")
    assert "service_backbone(" in text or "process_backbone(" in text
    for own_part in ("watch_broker(", "TopicCheck(", "BackgroundTasks("):
        assert own_part not in text, f"{process} starts {own_part} itself, beside the backbone"
