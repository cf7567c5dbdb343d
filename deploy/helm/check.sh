#!/usr/bin/env bash
# Static checks of everything under deploy/ — what `make helm-lint` runs; any error fails it.
#
#   1. helm lint --strict             default values and deploy/helm/ci/production-values.yaml
#   2. helm template | checks         per value set: kind allow-list, prometheus-operator objects
#                                     against strict CRD subsets, in-release references
#                                     (validate_manifests.py), then kubernetes-validate --strict
#                                     for each Kubernetes version in KUBE_VERSIONS
#   3. monitoring sources             deploy/prometheus/rules.yml == chart files/rules.yml,
#                                     dashboard.json regenerated from deploy/grafana/build_dashboard.py
#   4. promtool check rules / test rules
#
# Tools: deploy/install-tools.sh puts helm and promtool in .tools/bin; kubernetes-validate, PyYAML
# and jsonschema come from the project venv (.venv, or $PYTHON).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${REPO_ROOT}"

CHART="deploy/helm/bookmarks-platform"
VALUE_SETS=("default" "deploy/helm/ci/production-values.yaml")
# Oldest supported (Chart.yaml kubeVersion), a middle one, and the newest we test against.
KUBE_VERSIONS=(1.28.0 1.31.0 1.34.0)

export PATH="${REPO_ROOT}/.tools/bin:${REPO_ROOT}/.venv/bin:${PATH}"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "${REPO_ROOT}/.venv/bin/python" ]; then PYTHON="${REPO_ROOT}/.venv/bin/python"; else PYTHON="python3"; fi
fi

step() { printf '\n==> %s\n' "$*"; }
fail() { printf 'check.sh: FAILED: %s\n' "$*" >&2; exit 1; }

for tool in helm promtool kubernetes-validate; do
  command -v "${tool}" >/dev/null || fail "${tool} not found (run deploy/install-tools.sh; kubernetes-validate is in the venv)"
done

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

values_args() { # prints the -f argument for a value set ("default" = none)
  [ "$1" = "default" ] || printf -- '-f\n%s\n' "$1"
}

step "helm $(helm version --short)"

for set in "${VALUE_SETS[@]}"; do
  mapfile -t vargs < <(values_args "${set}")
  label="$(basename "${set}" .yaml)"

  step "helm lint --strict (${label})"
  helm lint --strict "${CHART}" "${vargs[@]}"

  for kv in "${KUBE_VERSIONS[@]}"; do
    step "helm template + validation (${label}, Kubernetes ${kv})"
    rendered="${WORK}/${label}-${kv}.yaml"
    native="${WORK}/${label}-${kv}.native.yaml"
    helm template bookmarks "${CHART}" --namespace bookmarks --kube-version "${kv}" "${vargs[@]}" > "${rendered}"
    "${PYTHON}" deploy/helm/validate_manifests.py "${rendered}" --native-out "${native}"
    # --quiet prints only warnings and failures; a warning (e.g. a kind without a schema) fails too.
    report="$(kubernetes-validate --strict --quiet -k "${kv}" "${native}")" || {
      printf '%s\n' "${report}"; fail "kubernetes-validate (${label}, ${kv})"; }
    if [ -n "${report}" ]; then printf '%s\n' "${report}"; fail "kubernetes-validate warnings (${label}, ${kv})"; fi
    echo "kubernetes-validate --strict -k ${kv}: $(grep -c '^kind:' "${native}") objects valid"
  done
done

step "monitoring sources in sync"
cmp -s "${CHART}/files/rules.yml" deploy/prometheus/rules.yml ||
  fail "deploy/prometheus/rules.yml differs from ${CHART}/files/rules.yml (the source): cp ${CHART}/files/rules.yml deploy/prometheus/rules.yml"
"${PYTHON}" deploy/grafana/build_dashboard.py --check
echo "rules.yml copy identical; dashboard.json up to date"

step "promtool check rules"
promtool check rules "${CHART}/files/rules.yml" deploy/prometheus/rules.yml

step "promtool test rules"
promtool test rules deploy/prometheus/rules_test.yml

printf '\ncheck.sh: all checks passed\n'
