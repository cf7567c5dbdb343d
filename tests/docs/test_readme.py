"""The configuration reference documents what the code really reads, the code reads every variable of
the configuration contract (the variables operators and clients were promised, listed below), and the
README stays a short description of the present: the two commands first, the contract's variables, links
to the references, no benchmark diary."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The configuration contract: variables whose names and meaning are promised to operators.
CONTRACT = {
    "GATEWAY_HOST",
    "GATEWAY_PORT",
    "ACCESS_TOKEN_TTL_SECONDS",
    "REFRESH_TOKEN_TTL_SECONDS",
    "IDP_A_JWKS_URL",
    "IDP_A_ISSUER",
    "IDP_A_AUDIENCE",
    "IDP_B_JWKS_URL",
    "IDP_B_ISSUER",
    "IDP_B_AUDIENCE",
    "ADMIN_TOKEN",
    "ENRICHMENT_ALLOW_PRIVATE_NETWORKS",
    "ENRICHMENT_RETRY_DELAYS_SECONDS",
    "ENRICHMENT_FETCH_TIMEOUT_SECONDS",
    "ENRICHMENT_CACHE_TTL_SECONDS",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ENRICHMENT_LLM_MODEL",
    "ENRICHMENT_BROWSER",
    "DATABASE_URL_AUTH",
    "DATABASE_URL_BOOKMARKS",
    "DATABASE_URL_ENRICHMENT",
    "KAFKA_BOOTSTRAP_SERVERS",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
}


def variables_read_by_the_code() -> set[str]:
    names: set[str] = set()
    for path in [*ROOT.glob("libs/*/src/**/*.py"), *ROOT.glob("services/*/src/**/*.py")]:
        names |= set(re.findall(r'validation_alias="([A-Z][A-Z0-9_]+)"', path.read_text()))
    return names


CONFIGURATION = ROOT / "docs" / "configuration.md"
README = ROOT / "README.md"


def documented_names(path: Path) -> set[str]:
    return set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", path.read_text()))


def test_every_variable_the_code_reads_is_in_the_configuration_reference() -> None:
    missing = sorted(variables_read_by_the_code() - documented_names(CONFIGURATION))
    assert not missing, f"docs/configuration.md does not document: {missing}"


def test_every_variable_of_the_contract_is_read() -> None:
    read = variables_read_by_the_code() | {"GATEWAY_HOST", "GATEWAY_PORT"}
    assert not sorted(CONTRACT - read), f"contract variables no service reads: {sorted(CONTRACT - read)}"


def test_every_contract_variable_is_in_the_readme_and_the_reference() -> None:
    for path in (README, CONFIGURATION):
        missing = sorted(CONTRACT - documented_names(path))
        assert not missing, f"{path.name} does not document: {missing}"


def test_readme_leads_with_the_two_commands() -> None:
    head = README.read_text()[:2500]
    assert "make run" in head and "make test" in head


def test_readme_is_short_and_links_its_references() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    for target in ("ARCHITECTURE.md", "docs/configuration.md", "docs/performance.md", "docs/api-guide.md"):
        assert f"]({target})" in text, f"README does not link {target}"
    assert "](docs/decisions/README.md)" in text
    assert "<!-- screenshots -->" in text


def test_readme_states_the_present_not_a_diary() -> None:
    text = README.read_text()
    assert not re.search(r"20\d\d-\d\d-\d\d", text), "dated entries belong in git history"
    assert not set("§¶∆◊※◆✧✦‡†") & set(text), "footnote glyphs"
    assert not re.search(r"\b(session|sessions|issue \d+|round \d+)\b", text, re.I)


def test_linked_docs_exist() -> None:
    for path in (README, ROOT / "ARCHITECTURE.md", CONFIGURATION, ROOT / "docs" / "decisions" / "README.md"):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text()):
            assert (path.parent / target).exists(), f"{path.name} links a missing {target}"
