#!/bin/bash
# Memory per connected stream for docs/PERFORMANCE.md: npud's resident
# memory with N streams open and waiting for their first token (the engine
# is simulated with a long TTFT), minus its memory before, divided by N.
#   LEVELS="1000 10000" bash testdata/baseline/memory.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
LEVELS="${LEVELS:-1000 10000}"
work="$(mktemp -d)"
pid=""; bench=""
trap '[ -n "$bench" ] && kill "$bench" 2>/dev/null; [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
ulimit -n 65536 2>/dev/null || true
go build -tags nomsgpack -o "$work/npud" .
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
active() { curl -s http://127.0.0.1:18020/health | sed -n 's/.*"active_streams":\([0-9]*\).*/\1/p'; }
for n in $LEVELS; do
    "$work/npud" serve --listen 127.0.0.1:18020 --sim-ttft 60s --sim-slots $((n + 10)) --max-queue $((n + 10)) \
        --heartbeat 0 --log-level error & pid=$!
    for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/18020) 2>/dev/null && break; sleep 0.1; done
    curl -s http://127.0.0.1:18020/v1/chat/completions -d '{"model":"sim","max_tokens":1,"messages":[{"role":"user","content":"warm"}]}' \
        -m 1 >/dev/null || true # warm up (times out on the long TTFT; that is fine)
    sleep 1
    before="$(rss "$pid")"
    "$work/npud" bench --url http://127.0.0.1:18020 --concurrency "$n" --requests "$n" --max-tokens 1 \
        --prompt-tokens 8 --timeout 2m >/dev/null 2>&1 & bench=$!
    for _ in $(seq 300); do [ "$(active)" -ge "$n" ] && break; sleep 0.1; done
    sleep 2
    during="$(rss "$pid")"
    open="$(active)"
    echo "$open streams connected: RSS $before KiB -> $during KiB: $(( (during - before) * 1024 / open )) bytes per connected stream"
    kill "$bench" "$pid" 2>/dev/null || true
    wait "$bench" "$pid" 2>/dev/null || true
    bench=""; pid=""
done
