#!/usr/bin/env bash
# Installs the third-party OTLP profiles decoder tests/otlp_decode.rs checks our export with
# (opentelemetry-proto 1.45.2 from PyPI, pinned with hashes) into DIR/otlp-decoder/venv
# (default DIR: .tools/ at the repository root, which git ignores). Nothing is fetched when it
# is already there at the right version.
#
#   tests/otlp/install.sh [DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../.tools}"
mkdir -p "$dir"
venv="$(cd "$dir" && pwd)/otlp-decoder/venv"
if [ -x "$venv/bin/python" ] &&
  "$venv/bin/pip" freeze 2>/dev/null | grep -qx "opentelemetry-proto==1.45.2"; then
  echo "otlp-decoder: opentelemetry-proto 1.45.2 (already installed)"
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes \
  -r "$here/requirements.txt"
"$venv/bin/python" -c 'from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2'
echo "otlp-decoder: $("$venv/bin/pip" freeze | grep opentelemetry-proto)"
