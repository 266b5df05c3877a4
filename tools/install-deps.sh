#!/usr/bin/env bash
# Install the Debian 12 packages kvmsim needs to build and test.
# Idempotent: checks each package with dpkg-query and installs only what is missing.
# Must run as root (the Makefile's `deps` target uses sudo when needed).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config clang-format clang-tidy
  libsystemc-dev libboost-graph-dev libfmt-dev catch2 libyaml-cpp-dev libcli11-dev
  nlohmann-json3-dev
  pybind11-dev python3-pybind11 python3-dev python3-numpy python3-pandas python3-pytest
  # Python package (bindings/): plots, Dask sweeps, progress bars, scenario sweep: sections,
  # notebooks executed by the tests (nbclient + the ipykernel "python3" kernel)
  python3-matplotlib python3-distributed python3-tqdm python3-yaml
  python3-nbformat python3-nbclient python3-ipykernel jupyter-nbconvert
  # the documentation site (make docs)
  python3-sphinx python3-myst-parser furo
)

is_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

missing=()
for pkg in "${PACKAGES[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo bash tools/install-deps.sh)" >&2
  exit 1
fi

echo "install-deps: installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
update_ok=1
apt-get update || { update_ok=0; echo "install-deps: warning: apt-get update failed, trying install anyway" >&2; }
if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
  if [[ $update_ok -eq 0 ]]; then
    echo "install-deps: apt-get update and apt-get install both failed" >&2
  fi
  echo "install-deps: failed to install: ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installed: ${missing[*]}"
