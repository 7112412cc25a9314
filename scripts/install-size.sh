#!/usr/bin/env bash
# What a user's disk pays for signalbox: builds the packages, packs each as it would be published
# (pnpm pack applies publishConfig), installs the tarballs with npm into fresh projects outside
# the workspace, and prints the size of node_modules (du -sk, KiB) for two installs:
#   core  @signalbox/core alone (with the zod its peer range asks for)
#   cli   @signalbox/cli and the workspace packages it depends on
#   core-own  @signalbox/core with its dependencies only (npm --legacy-peer-deps: no peers, no zod):
#             what it adds to a project that already has its peers (zod, xstate)
# npm installs a package's non-optional peers too, so a peer dependency still counts in the first two.
# Usage: scripts/install-size.sh [--no-build] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

build=1
keep=0
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    --keep) keep=1 ;;
    *) echo "install-size: unknown argument $arg" >&2; exit 2 ;;
  esac
done

if [ "$build" = 1 ]; then pnpm build >/dev/null; fi

base=$(mktemp -d "${TMPDIR:-/tmp}/signalbox-size-XXXXXX")
cleanup() { if [ "$keep" = 0 ]; then rm -rf "$base"; else echo "install-size: kept $base" >&2; fi; }
trap cleanup EXIT

mkdir -p "$base/packs"
for pkg in core actors console mcp otel cli; do
  (cd "packages/$pkg" && pnpm pack --pack-destination "$base/packs" >/dev/null)
done
tarball() { ls "$base/packs"/signalbox-"$1"-*.tgz; }

# install <project> <package>... [-- npm flags]: a project that depends on the named packages' tarballs (the CLI's
# workspace dependencies are given as tarballs too, as a registry would resolve them).
install() {
  local name=$1
  shift
  local dir="$base/$name"
  mkdir -p "$dir"
  local deps=() flags=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --) shift; flags=("$@"); break ;;
      *) deps+=("\"@signalbox/$1\":\"file:$(tarball "$1")\""); shift ;;
    esac
  done
  # The zod a user brings (a peer), unless peers are left out.
  [ ${#flags[@]} -gt 0 ] || deps+=('"zod":"^4.0.0"')
  local joined
  joined=$(IFS=,; echo "${deps[*]}")
  printf '{"name":"size-%s","private":true,"type":"module","dependencies":{%s}}\n' "$name" "$joined" >"$dir/package.json"
  (cd "$dir" && npm install --prefer-offline --no-audit --no-fund --loglevel=error ${flags[@]+"${flags[@]}"} >/dev/null)
  du -sk "$dir/node_modules" | cut -f1
}

core=$(install core core)
cli=$(install cli core actors console mcp otel cli)
own=$(install core-own core -- --legacy-peer-deps)
printf 'core\t%s KiB\ncli\t%s KiB\ncore-own\t%s KiB\n' "$core" "$cli" "$own"
