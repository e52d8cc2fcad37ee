#!/usr/bin/env bash
# Incremental development build of ember-tensor into a private folder, for working on the core
# without reinstalling:   tools/dev_build.sh NAME   then   PYTHONPATH=<printed dir> python -m pytest ...
# Uses ccache when available so unchanged translation units are not recompiled.
# EMBER_PREBUILT=path/to/_C.so takes an extension built elsewhere instead of building.
set -euo pipefail
name="${1:-default}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${TMPDIR:-/tmp}/ember-dev-${name}"
mkdir -p "$out/lib/ember" "$out/tmp"
prebuilt="${EMBER_PREBUILT:+$(realpath "$EMBER_PREBUILT")}"
cd "$root/packages/tensor-core"
# CCACHE_BASEDIR makes paths relative, so other checkouts of the repository share the cache.
if command -v ccache >/dev/null; then export CC="ccache gcc" CXX="ccache g++" CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1; fi
log="$out/build.log"
if [ -n "$prebuilt" ]; then  # an ember/_C*.so built elsewhere for this Python
  cp "$prebuilt" "$out/lib/ember/"
elif ! python3 setup.py -q build_ext --build-lib "$out/lib" --build-temp "$out/tmp" --force \
    -j "$(nproc)" >"$log" 2>&1; then
  grep -E "error" "$log" | head -40 >&2
  exit 1
fi
# Python sources are linked, so edits to them need no rebuild.
for f in "$root"/packages/tensor-core/ember/*; do
  case "$f" in *.so) continue;; esac
  ln -sfn "$f" "$out/lib/ember/$(basename "$f")"
done
echo "$out/lib"
