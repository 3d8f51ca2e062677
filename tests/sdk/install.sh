#!/usr/bin/env bash
# Installs the real Pyroscope SDKs that tests/receive_http.rs pushes with, at pinned versions
# with verified hashes (PyPI, pip --require-hashes), into DIR (default: .tools/ at the
# repository root, which git ignores):
#   DIR/pyroscope-sdk/venv          pyroscope-io 1.4.0  (Push API)        requirements.txt
#   DIR/pyroscope-sdk-legacy/venv   pyroscope-io 0.8.16 (legacy /ingest)  requirements-legacy.txt
# Nothing is fetched when both are already there at the right version.
#
#   tests/sdk/install.sh [DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../.tools}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

install_venv() { # NAME VERSION REQUIREMENTS
  local venv="$dir/$1/venv"
  if [ -x "$venv/bin/python" ] &&
    "$venv/bin/pip" freeze 2>/dev/null | grep -qx "pyroscope-io==$2"; then
    echo "$1: pyroscope-io $2 (already installed)"
    return
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes \
    -r "$3"
  "$venv/bin/python" -c 'import pyroscope' # the native library loads
  echo "$1: $("$venv/bin/pip" freeze | grep pyroscope-io)"
}

install_venv pyroscope-sdk 1.4.0 "$here/requirements.txt"
install_venv pyroscope-sdk-legacy 0.8.16 "$here/requirements-legacy.txt"
