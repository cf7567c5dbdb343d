"""How the launcher reads its configuration from the environment (no processes started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.errors import ConfigError, PortBusyError
from devstack.stack import Stack, StackConfig, check_ports


def test_defaults_are_the_documented_ports(tmp_path: Path) -> None:
    config = StackConfig.from_env({"DEVSTACK_DATA_DIR": str(tmp_path)})

    assert config.data_dir == tmp_path
    assert (config.pg_port, config.kafka_port) == (5442, 19092)
    assert config.service_ports == {
        "auth": 8081,
        "bookmarks": 8082,
        "enrichment": 8083,
        "enrichment-worker": 8084,
        "gateway": 8080,
    }
    assert config.metrics_ports == {
        "auth": 9081,
        "bookmarks": 9082,
        "enrichment": 9083,
        "enrichment-worker": 9084,
        "gateway": 9080,
    }
    assert config.database_urls is None and config.kafka_bootstrap is None


def test_environment_overrides_ports_and_hosts(tmp_path: Path) -> None:
    config = StackConfig.from_env(
        {
            "DEVSTACK_DATA_DIR": str(tmp_path),
            "GATEWAY_PORT": "9000",
            "GATEWAY_HOST": "0.0.0.0",
            "ENRICHMENT_WORKER_PORT": "9004",
            "DEVSTACK_PG_PORT": "6000",
        }
    )
    stack = Stack(config)

    assert stack.gateway_url == "http://127.0.0.1:9000"
    assert stack.env["GATEWAY_HOST"] == "0.0.0.0"
    assert stack.env["ENRICHMENT_WORKER_URL"] == "http://127.0.0.1:9004"
    assert stack.dsn("bookmarks") == "postgresql+asyncpg://postgres@127.0.0.1:6000/bookmarks"


def test_external_infrastructure_is_used_instead_of_embedded(tmp_path: Path) -> None:
    env = {
        "DEVSTACK_DATA_DIR": str(tmp_path),
        "DATABASE_URL_AUTH": "postgresql+asyncpg://u@db/auth",
        "DATABASE_URL_BOOKMARKS": "postgresql+asyncpg://u@db/bookmarks",
        "DATABASE_URL_ENRICHMENT": "postgresql+asyncpg://u@db/enrichment",
        "KAFKA_BOOTSTRAP_SERVERS": "kafka:9092",
    }
    stack = Stack(StackConfig.from_env(env))

    assert stack.postgres is None and stack.broker is None
    assert stack.dsn("auth") == "postgresql+asyncpg://u@db/auth"
    assert stack.env["KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"


def test_half_external_databases_are_refused(tmp_path: Path) -> None:
    env = {"DEVSTACK_DATA_DIR": str(tmp_path), "DATABASE_URL_AUTH": "postgresql+asyncpg://u@db/auth"}

    with pytest.raises(ConfigError, match="DATABASE_URL_BOOKMARKS, DATABASE_URL_ENRICHMENT not set"):
        StackConfig.from_env(env)


@pytest.mark.parametrize("raw", ["http", "0", "70000"])
def test_bad_port_is_a_config_error(tmp_path: Path, raw: str) -> None:
    with pytest.raises(ConfigError, match="GATEWAY_PORT"):
        StackConfig.from_env({"DEVSTACK_DATA_DIR": str(tmp_path), "GATEWAY_PORT": raw})


def test_same_port_twice_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="port 1 is configured for both auth and gateway"):
        check_ports([("127.0.0.1", 1, "auth", "AUTH_PORT"), ("127.0.0.1", 1, "gateway", "GATEWAY_PORT")])


def test_port_busy_message_names_the_variable() -> None:
    assert str(PortBusyError(8080, "gateway", "GATEWAY_PORT")) == (
        "port 8080 (gateway) is already in use; set GATEWAY_PORT to another port"
    )


def test_metrics_have_their_own_ports_passed_to_every_service(tmp_path: Path) -> None:
    config = StackConfig.from_env({"DEVSTACK_DATA_DIR": str(tmp_path), "GATEWAY_METRICS_PORT": "9900"})
    stack = Stack(config)

    assert stack.env["GATEWAY_METRICS_PORT"] == "9900"
    assert stack.env["AUTH_METRICS_PORT"] == "9081"
    assert stack.metrics_url("gateway") == "http://127.0.0.1:9900/metrics"


def test_test_stacks_get_free_metrics_ports(tmp_path: Path) -> None:
    config = StackConfig.for_tests(tmp_path)
    ports = [*config.service_ports.values(), *config.metrics_ports.values(), config.pg_port, config.kafka_port]
    assert len(set(ports)) == len(ports) == 12


def test_only_our_services_ready_answer_counts_as_ready() -> None:
    import httpx

    from devstack.stack import _is_ready_answer

    assert _is_ready_answer(httpx.Response(200, json={"status": "ready"}))
    # Something else on the port (a metrics exporter answers every GET) is not a ready service.
    assert not _is_ready_answer(httpx.Response(200, text="# HELP python_info Python platform information\n"))
    assert not _is_ready_answer(httpx.Response(200, json={"status": "ok"}))
    assert not _is_ready_answer(httpx.Response(503, json={"code": "unavailable", "message": "Not ready"}))
