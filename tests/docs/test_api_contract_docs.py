"""The API contract lives in the repository: docs/openapi.json is what the gateway would serve, and the
hand-written guide documents every error code the code can answer with."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "api-guide.md"


def _exporter():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("export_openapi", ROOT / "docs" / "export_openapi.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_openapi_document_is_current() -> None:
    exporter = _exporter()
    committed = (ROOT / "docs" / "openapi.json").read_text()
    assert committed == exporter.render(), "docs/openapi.json is stale: run `make openapi`"


def error_codes_in_code() -> set[str]:
    codes: set[str] = set()
    for path in [*ROOT.glob("libs/common/src/**/*.py"), *ROOT.glob("services/*/src/**/*.py")]:
        text = path.read_text()
        codes |= set(re.findall(r'^\s+code(?::\s*ClassVar\[str\])?\s*=\s*"([a-z][a-z0-9-]+)"', text, flags=re.M))
    return codes


def test_every_error_code_is_in_the_guide() -> None:
    guide = GUIDE.read_text()
    documented = set(re.findall(r"^\| \d{3} \| `([a-z0-9-]+)`", guide, flags=re.M))
    assert error_codes_in_code(), "the scan found no error codes: the pattern is out of date"
    missing = sorted(error_codes_in_code() - documented)
    assert not missing, f"docs/api-guide.md, section 1 does not document: {missing}"


OUTSIDE = ".." + "/shared"  # spelled in two parts so this file does not name it itself


def test_docs_stand_alone() -> None:
    for path in [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("tests/**/*.py")]:
        assert OUTSIDE not in path.read_text(), path
