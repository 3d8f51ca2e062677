#!/usr/bin/env bash
# Installs py-spy 0.4.1 from PyPI (pinned with its hash), the oracle tests/ebpf_python.rs checks
# pyroscope.ebpf's Python frames against, into DIR/py-spy/venv (default DIR: .tools/ at the
# repository root, which git ignores). Nothing is fetched when it is already there.
#
#   tests/pyspy/install.sh [DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../.tools}"
mkdir -p "$dir"
venv="$(cd "$dir" && pwd)/py-spy/venv"
if [ -x "$venv/bin/py-spy" ] && "$venv/bin/py-spy" --version 2>/dev/null | grep -qx "py-spy 0.4.1"; then
  echo "py-spy: 0.4.1 (already installed)"
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes \
  -r "$here/requirements.txt"
echo "py-spy: $("$venv/bin/py-spy" --version)"
