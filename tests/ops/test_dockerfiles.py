"""Static checks of the service images (no Docker engine needed).

Each Dockerfile must build from the repository root with uv and the lock, run as uid 10001, expose
the contract port and start the right module; the chart must agree with them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from _support import CHART, REPO_ROOT

IMAGES = {
    # service dir -> (package, modules it must be able to run, exposed ports)
    "auth": ("bookmarks-auth", ["auth"], {8081, 9081}),
    "bookmarks": ("bookmarks-bookmarks", ["bookmarks"], {8082, 9082}),
    "enrichment": ("bookmarks-enrichment", ["enrichment"], {8083, 8084, 9083, 9084}),
    "gateway": ("bookmarks-gateway", ["gateway"], {8080, 9080}),
}


def _instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text())
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        word, _, rest = stripped.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


@pytest.mark.parametrize("service", sorted(IMAGES))
def test_dockerfile(service: str) -> None:
    package, modules, ports = IMAGES[service]
    path = REPO_ROOT / "services" / service / "Dockerfile"
    ins = _instructions(path)
    args = {a.split("=", 1)[0]: a.split("=", 1)[1] for k, a in ins if k == "ARG" and "=" in a}
    assert args["PYTHON_IMAGE"] == "python:3.11-slim-bookworm", "base image pinned by tag"
    froms = [a for k, a in ins if k == "FROM"]
    # The gateway's image also builds the web app it serves, in a stage of its own.
    stages = ["${PYTHON_IMAGE} AS web"] if service == "gateway" else []
    assert froms == [*stages, "${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE} AS runtime"], "multi-stage"
    runs = " ".join(a for k, a in ins if k == "RUN")
    assert "pip install uv==0.13.9" in runs
    assert f"uv sync --frozen --no-dev --no-install-workspace --package {package}" in runs
    assert f"uv sync --frozen --no-dev --package {package}" in runs
    # every workspace member's manifest is copied before the first sync
    members = sorted(p.parent.relative_to(REPO_ROOT).as_posix() for p in REPO_ROOT.glob("*/*/pyproject.toml"))
    copies = [a for k, a in ins if k == "COPY"]
    for member in members:
        if member.startswith(("libs/", "services/")):
            assert f"{member}/pyproject.toml {member}/" in copies, f"{member}/pyproject.toml not copied"
    assert "pyproject.toml uv.lock ./" in copies
    runtime = ins[[i for i, (k, _a) in enumerate(ins) if k == "FROM"][-1] :]
    assert ("USER", "10001:10001") in runtime
    exposed = {int(p) for k, a in runtime if k == "EXPOSE" for p in a.split()}
    assert exposed == ports
    cmd = [a for k, a in runtime if k == "CMD"]
    assert cmd == [f'["python", "-m", "{modules[0]}"]']
    env = " ".join(a for k, a in runtime if k == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env  # the pods' root filesystem is read-only
    assert "/app/.venv/bin" in env
    if service == "gateway":
        assert any(a.startswith("--from=web ") for k, a in runtime if k == "COPY"), "the web build is shipped"
        assert "GATEWAY_WEB_DIR=/app/web" in env
    if service == "enrichment":
        assert "chromium" in " ".join(a for k, a in runtime if k == "RUN")
        assert "ENRICHMENT_BROWSER=auto" in env
    else:
        assert "apt-get" not in " ".join(a for k, a in runtime if k == "RUN")


def test_chart_uses_the_images_and_ports_of_the_dockerfiles() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert set(values["images"]) == set(IMAGES)
    for image, spec in values["images"].items():
        assert spec["repository"] == f"bookmarks-platform/{image}"


def test_dockerignore_keeps_local_state_out() -> None:
    patterns = {
        line.strip()
        for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for required in (".git", "**/.venv", ".tools", ".data", "**/__pycache__", "**/tests", "**/*.pem", "**/.env"):
        assert required in patterns, required
    # What the Dockerfiles copy must not be ignored.
    for needed in ("libs", "services", "uv.lock", "pyproject.toml"):
        assert needed not in patterns
