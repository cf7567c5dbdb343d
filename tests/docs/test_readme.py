"""The README documents what the code really reads, and the code reads every variable of the
configuration contract (the variables operators and clients were promised, listed below)."""

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


def test_every_variable_the_code_reads_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", readme))
    missing = sorted(variables_read_by_the_code() - documented)
    assert not missing, f"README does not document: {missing}"


def test_every_variable_of_the_contract_is_read() -> None:
    read = variables_read_by_the_code() | {"GATEWAY_HOST", "GATEWAY_PORT"}
    assert not sorted(CONTRACT - read), f"contract variables no service reads: {sorted(CONTRACT - read)}"


def test_every_contract_variable_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    assert not sorted(v for v in CONTRACT if f"`{v}`" not in readme)


def test_readme_leads_with_the_two_commands() -> None:
    head = (ROOT / "README.md").read_text()[:1500]
    assert "make run" in head and "make test" in head
