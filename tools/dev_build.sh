#!/usr/bin/env bash
# Incremental development build of ember-tensor into a private folder, for working on the core
# without reinstalling:   tools/dev_build.sh NAME   then   PYTHONPATH=<printed dir> python -m pytest ...
# setup.py compiles every file each time, through ccache when it is installed (unchanged files are
# cache hits), so a build never reuses a stale object. Per-file progress goes to the terminal.
# EMBER_PREBUILT=path/to/_C.so takes an extension built elsewhere instead of building.
set -euo pipefail
name="${1:-default}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${TMPDIR:-/tmp}/ember-dev-${name}"
mkdir -p "$out/lib/ember" "$out/tmp"
prebuilt="${EMBER_PREBUILT:+$(realpath "$EMBER_PREBUILT")}"
cd "$root/packages/tensor-core"
# Paths relative to the repository, so that other checkouts share ccache's entries.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR=1
log="$out/build.log"
if [ -n "$prebuilt" ]; then  # an ember/_C*.so built elsewhere for this Python
  cp "$prebuilt" "$out/lib/ember/"
elif ! python3 setup.py -q build_ext --build-lib "$out/lib" --build-temp "$out/tmp" \
    -j "$(nproc)" >"$log" 2>&1; then
  grep -E "error|failed" "$log" | head -40 >&2
  exit 1
fi
# Python sources are linked, so edits to them need no rebuild.
for f in "$root"/packages/tensor-core/ember/*; do
  case "$f" in *.so) continue;; esac
  ln -sfn "$f" "$out/lib/ember/$(basename "$f")"
done
echo "$out/lib"
