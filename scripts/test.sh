#!/usr/bin/env bash
# The whole test suite, from a fresh machine of this kind: makes sure the real parts the tests
# talk to are there (a NATS server with JetStream on 127.0.0.1:4222, Chromium and tmux), then
# runs vitest. Extra arguments go to vitest.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v nats-server >/dev/null 2>&1 || need_apt+=(nats-server)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test: installing ${need_apt[*]} (Debian packages)" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "test: missing ${need_apt[*]}; install them (e.g. apt-get install ${need_apt[*]})" >&2
    exit 1
  fi
fi

# The shared NATS server the tests expect; start one for this run if none answers.
nats_pid=""
nats_dir=""
if ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
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
