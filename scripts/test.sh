#!/usr/bin/env bash
# The whole test suite, from a fresh machine of this kind: makes sure the real parts the tests
# talk to are there (a NATS server with JetStream on 127.0.0.1:4222, Chromium and tmux), then
# runs vitest. Extra arguments go to vitest; `--project <name>` (unit, nats, processes, browser:
# see test/support/projects.ts) runs one project and asks only for the parts it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

# The projects asked for (all when none is).
projects=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --project) projects+=("${args[$((i + 1))]:-}") ;;
    --project=*) projects+=("${args[$i]#--project=}") ;;
  esac
done
[ ${#projects[@]} -gt 0 ] || projects=(unit nats processes browser)
wants() { case " ${projects[*]} " in *" $1 "*) return 0 ;; esac; return 1; }
need_nats=false
need_tmux=false
need_chromium=false
if wants nats || wants processes || wants browser; then need_nats=true; fi
if wants processes; then need_tmux=true; fi
if wants browser; then need_chromium=true; fi

missing=()
if $need_tmux; then command -v tmux >/dev/null 2>&1 || missing+=(tmux); fi
if $need_chromium; then command -v chromium >/dev/null 2>&1 || missing+=(chromium); fi
if $need_nats; then command -v nats-server >/dev/null 2>&1 || missing+=(nats-server); fi
if [ ${#missing[@]} -gt 0 ]; then
  # Which system this is: Debian (and its derivatives) can install all three with apt-get.
  os_release="${SIGNALBOX_OS_RELEASE:-/etc/os-release}"
  os_id=""
  if [ -r "$os_release" ]; then os_id=$(grep -E '^(ID|ID_LIKE)=' "$os_release" | tr -d '"' | tr '\n' ' '); fi
  case " $os_id $(uname -s 2>/dev/null || true) " in
    *debian*|*ubuntu*) system=debian ;;
    *fedora*|*rhel*|*centos*) system=fedora ;;
    *Darwin*) system=macos ;;
    *) system=other ;;
  esac
  if [ "$system" = debian ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test: installing ${missing[*]} (Debian packages)" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "test: the tests need ${missing[*]}, which this machine lacks. Install them, then run again:" >&2
    case "$system" in
      debian) echo "  sudo apt-get install ${missing[*]}" >&2 ;;
      fedora) echo "  sudo dnf install ${missing[*]}" >&2 ;;
      macos)
        echo "  brew install $(printf '%s ' "${missing[@]}" | sed 's/chromium //')" >&2
        case " ${missing[*]} " in *" chromium "*) echo "  brew install --cask chromium" >&2 ;; esac
        ;;
      *) echo "  with your system's package manager" >&2 ;;
    esac
    case " ${missing[*]} " in
      *" nats-server "*) echo "  nats-server is also a single binary: https://github.com/nats-io/nats-server/releases" >&2 ;;
    esac
    case " ${missing[*]} " in
      *" chromium "*) echo "  chromium must be on PATH as \"chromium\" (the browser tests drive it headless)" >&2 ;;
    esac
    exit 1
  fi
fi

# The shared NATS server the tests expect; start one for this run if none answers.
nats_pid=""
nats_dir=""
if $need_nats && ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
  nats_dir=$(mktemp -d)
  nats-server -a 127.0.0.1 -p 4222 -js -sd "$nats_dir" >"$nats_dir/nats.log" 2>&1 &
  nats_pid=$!
  for _ in $(seq 1 50); do (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null && break; sleep 0.1; done
  echo "test: started nats-server (pid $nats_pid) on 127.0.0.1:4222" >&2
fi
cleanup() {
  if [ -n "$nats_pid" ]; then kill "$nats_pid" 2>/dev/null || true; wait "$nats_pid" 2>/dev/null || true; rm -rf "$nats_dir"; fi
}
trap cleanup EXIT

pnpm exec vitest run "$@"
