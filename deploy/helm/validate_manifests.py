"""Checks rendered chart manifests beyond what kubernetes-validate can see.

    python deploy/helm/validate_manifests.py rendered.yaml --native-out native.yaml

- every object must be of a kind this chart is known to render (a typo in `kind` would otherwise
  only be a warning in kubernetes-validate);
- prometheus-operator objects (ServiceMonitor, PrometheusRule), whose CRDs kubernetes-validate does
  not ship, are validated here against a strict subset of the upstream CRD schemas; the
  PrometheusRule must carry exactly files/rules.yml, the dashboard ConfigMap exactly
  files/dashboard.json;
- references inside the release resolve: Service/PDB/HPA/ServiceMonitor selectors and targets,
  Ingress backends, envFrom ConfigMaps;
- the remaining (native) objects are written to --native-out for `kubernetes-validate --strict`.

Exit status 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CHART = Path(__file__).resolve().parent / "bookmarks-platform"

NATIVE_KINDS = {
    ("v1", "ConfigMap"),
    ("v1", "Service"),
    ("v1", "ServiceAccount"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("policy/v1", "PodDisruptionBudget"),
    ("networking.k8s.io/v1", "Ingress"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
}

_STR_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_DURATION = {
    "type": "string",
    "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
_METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", "maxLength": 253},
        "namespace": {"type": "string"},
        "labels": _STR_MAP,
        "annotations": _STR_MAP,
    },
    "additionalProperties": False,
}
_LABEL_SELECTOR = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "matchLabels": _STR_MAP,
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "additionalProperties": False,
                "properties": {
                    "key": {"type": "string"},
                    "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}
_RELABEL = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "sourceLabels": {"type": "array", "items": {"type": "string", "pattern": r"^[a-zA-Z_][a-zA-Z0-9_]*$"}},
        "separator": {"type": "string"},
        "targetLabel": {"type": "string"},
        "regex": {"type": "string"},
        "modulus": {"type": "integer"},
        "replacement": {"type": "string"},
        "action": {
            "enum": [
                "replace",
                "keep",
                "drop",
                "hashmod",
                "labelmap",
                "labeldrop",
                "labelkeep",
                "lowercase",
                "uppercase",
            ]
        },
    },
}

# Strict subsets of monitoring.coreos.com/v1 (prometheus-operator CRDs): the fields this chart uses
# plus their common siblings. Anything else is a mistake here, not an option we forgot.
SERVICE_MONITOR = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": _METADATA,
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "additionalProperties": False,
            "properties": {
                "jobLabel": {"type": "string"},
                "targetLabels": {"type": "array", "items": {"type": "string"}},
                "podTargetLabels": {"type": "array", "items": {"type": "string"}},
                "selector": _LABEL_SELECTOR,
                "namespaceSelector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "any": {"type": "boolean"},
                        "matchNames": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "targetPort": {"type": ["string", "integer"]},
                            "path": {"type": "string", "pattern": "^/"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": _DURATION,
                            "scrapeTimeout": _DURATION,
                            "honorLabels": {"type": "boolean"},
                            "honorTimestamps": {"type": "boolean"},
                            "relabelings": {"type": "array", "items": _RELABEL},
                            "metricRelabelings": {"type": "array", "items": _RELABEL},
                        },
                    },
                },
            },
        },
    },
}
PROMETHEUS_RULE = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PrometheusRule"},
        "metadata": _METADATA,
        "spec": {
            "type": "object",
            "required": ["groups"],
            "additionalProperties": False,
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "rules"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "interval": _DURATION,
                            "limit": {"type": "integer"},
                            "rules": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "required": ["expr"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "alert": {"type": "string"},
                                        "record": {"type": "string"},
                                        "expr": {"type": ["string", "integer"]},
                                        "for": _DURATION,
                                        "keep_firing_for": _DURATION,
                                        "labels": _STR_MAP,
                                        "annotations": _STR_MAP,
                                    },
                                    "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
                                },
                            },
                        },
                    },
                }
            },
        },
    },
}
CRD_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR,
    ("monitoring.coreos.com/v1", "PrometheusRule"): PROMETHEUS_RULE,
}


def _name(doc: dict[str, Any]) -> str:
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        present = expr["key"] in labels
        value = labels.get(expr["key"])
        op = expr["operator"]
        if (
            (op == "In" and value not in expr.get("values", []))
            or (op == "NotIn" and present and value in expr.get("values", []))
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def check(docs: list[dict[str, Any]]) -> list[str]:
    errors: list[str] = []
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        key = (doc.get("apiVersion"), doc.get("kind"))
        by_kind.setdefault(str(doc.get("kind")), []).append(doc)
        if key in CRD_SCHEMAS:
            validator = jsonschema.Draft202012Validator(CRD_SCHEMAS[key])
            for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
                path = ".".join(str(p) for p in err.path)
                errors.append(f"{_name(doc)}: {path}: {err.message}")
        elif key not in NATIVE_KINDS:
            errors.append(f"{_name(doc)}: unexpected apiVersion/kind {key}")

    seen: set[tuple[str, str]] = set()
    for doc in docs:
        ident = (str(doc.get("kind")), str(doc.get("metadata", {}).get("name")))
        if ident in seen:
            errors.append(f"{_name(doc)}: rendered twice")
        seen.add(ident)

    deployments = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
    pod_labels = {n: d["spec"]["template"]["metadata"]["labels"] for n, d in deployments.items()}
    services = {s["metadata"]["name"]: s for s in by_kind.get("Service", [])}
    configmaps = {c["metadata"]["name"] for c in by_kind.get("ConfigMap", [])}

    for name, dep in deployments.items():
        if not _selects(dep["spec"]["selector"], pod_labels[name]):
            errors.append(f"Deployment/{name}: selector does not match its own pod labels")
        for container in dep["spec"]["template"]["spec"]["containers"]:
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef", {}).get("name")
                if ref and ref not in configmaps:
                    errors.append(f"Deployment/{name}: envFrom ConfigMap {ref} is not rendered")
    for name, svc in services.items():
        selector = {"matchLabels": svc["spec"].get("selector", {})}
        targets = [d for d, labels in pod_labels.items() if _selects(selector, labels)]
        if len(targets) != 1:
            errors.append(f"Service/{name}: selects {len(targets)} Deployments, expected 1")
    for pdb in by_kind.get("PodDisruptionBudget", []):
        if not any(_selects(pdb["spec"]["selector"], labels) for labels in pod_labels.values()):
            errors.append(f"{_name(pdb)}: selects no Deployment")
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        target = hpa["spec"]["scaleTargetRef"]["name"]
        if target not in deployments:
            errors.append(f"{_name(hpa)}: scales unknown Deployment {target}")
        elif "replicas" in deployments[target]["spec"]:
            errors.append(f"{_name(hpa)}: Deployment {target} also sets replicas (would fight the HPA)")
        if not hpa["spec"].get("metrics"):
            errors.append(f"{_name(hpa)}: no metrics")
    for ing in by_kind.get("Ingress", []):
        for rule in ing["spec"].get("rules", []):
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                target = services.get(backend["name"])
                ports = {p.get("name") for p in target["spec"]["ports"]} if target else set()
                if target is None or backend["port"].get("name") not in ports:
                    errors.append(f"{_name(ing)}: backend {backend} does not exist")
    for job in by_kind.get("Job", []):
        hooks = job["metadata"].get("annotations", {}).get("helm.sh/hook", "")
        if set(hooks.split(",")) != {"pre-install", "pre-upgrade"}:
            errors.append(f"{_name(job)}: expected a pre-install,pre-upgrade hook, got {hooks!r}")
    for sm in by_kind.get("ServiceMonitor", []):
        selected = [s for s in services.values() if _selects(sm["spec"]["selector"], s["metadata"]["labels"])]
        if len(selected) != len(deployments):
            errors.append(f"{_name(sm)}: selects {len(selected)} Services, expected {len(deployments)}")
    for rule in by_kind.get("PrometheusRule", []):
        expected = yaml.safe_load((CHART / "files" / "rules.yml").read_text())["groups"]
        if rule["spec"]["groups"] != expected:
            errors.append(f"{_name(rule)}: groups differ from files/rules.yml")
    for cm in by_kind.get("ConfigMap", []):
        if cm["metadata"].get("labels", {}).get("grafana_dashboard") == "1":
            data = cm.get("data", {})
            expected = json.loads((CHART / "files" / "dashboard.json").read_text())
            if [json.loads(v) for v in data.values()] != [expected]:
                errors.append(f"{_name(cm)}: dashboard differs from files/dashboard.json")
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rendered", type=Path, help="output of helm template")
    parser.add_argument("--native-out", type=Path, required=True, help="where to write the native objects")
    args = parser.parse_args()

    docs = [d for d in yaml.safe_load_all(args.rendered.read_text()) if d]
    if not docs:
        print(f"{args.rendered}: no objects rendered", file=sys.stderr)
        return 1
    errors = check(docs)
    for err in errors:
        print(f"ERROR {args.rendered.name}: {err}", file=sys.stderr)
    native = [d for d in docs if (d.get("apiVersion"), d.get("kind")) in NATIVE_KINDS]
    args.native_out.write_text(yaml.safe_dump_all(native, sort_keys=False))
    crds = len(docs) - len(native)
    print(f"{args.rendered.name}: {len(docs)} objects ({crds} prometheus-operator), {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
