#!/usr/bin/env bash
# Installs the Debian 12 packages peakcast needs to build and test. Idempotent: packages already
# present are skipped, so a second run costs one dpkg query.
# Usage: scripts/install-deps.sh [build|slurm|all]   (default: build)
set -euo pipefail
what="${1:-build}"

build_pkgs=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  clang libclang-rt-14-dev
  libxgboost-dev xgboost
  libtorch-dev libopenblas0-pthread
  nlohmann-json3-dev libcpp-httplib-dev libcli11-dev libspdlog-dev libfmt-dev
  libssl-dev libpcre2-dev libsqlite3-dev zlib1g-dev libutf8proc-dev
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  chromium
)
# npm installs the report's plotting library (src/report/js/package-lock.json) at build time; a
# Node.js from elsewhere that brings its own npm is left as it is.
if ! command -v npm >/dev/null 2>&1; then build_pkgs+=(npm); fi
slurm_pkgs=(
  slurm-wlm slurmdbd slurm-client munge mariadb-server lua5.1 lua-socket lua-cjson
)

pkgs=()
case "$what" in
  build) pkgs=("${build_pkgs[@]}") ;;
  slurm) pkgs=("${slurm_pkgs[@]}") ;;
  all)   pkgs=("${build_pkgs[@]}" "${slurm_pkgs[@]}") ;;
  *) echo "usage: $0 [build|slurm|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Services must not start on install (CI and containers have no init); the tests start them.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
