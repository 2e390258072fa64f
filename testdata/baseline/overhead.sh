#!/bin/bash
# The overhead figures of docs/PERFORMANCE.md: client-observed TTFT and
# inter-token latency minus the simulated engine's own (TTFT_MS, ITL_MS), at
# several concurrencies, with enough engine slots that nothing queues.
#   ITL_MS=20 TTFT_MS=100 LEVELS="1 64 256" bash testdata/baseline/overhead.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ITL_MS="${ITL_MS:-20}"
TTFT_MS="${TTFT_MS:-100}"
LEVELS="${LEVELS:-1 64 256}"
TOKENS="${TOKENS:-32}"
work="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
go build -tags nomsgpack -o "$work/npud" .
"$work/npud" serve --listen 127.0.0.1:18010 --sim-ttft "${TTFT_MS}ms" --sim-itl "${ITL_MS}ms" \
    --sim-prompt-token-cost 0 --sim-slots 4096 --max-queue 4096 --heartbeat 0 --log-level warn & pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/18010) 2>/dev/null && break; sleep 0.1; done

printf '%-12s %-8s %12s %12s %12s %12s %10s\n' concurrency api "TTFT p50+" "TTFT p99+" "ITL p50+" "ITL p99+" errors
for c in $LEVELS; do
    for api in openai ollama; do
        "$work/npud" bench --url http://127.0.0.1:18010 --api "$api" --concurrency "$c" --requests $((c * 4)) \
            --prompt-tokens 8 --max-tokens "$TOKENS" --json >"$work/r.json"
        python3 - "$work/r.json" "$c" "$api" "$TTFT_MS" "$ITL_MS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); c, api = sys.argv[2], sys.argv[3]
ttft, itl = float(sys.argv[4]), float(sys.argv[5])
print("%-12s %-8s %9.3f ms %9.3f ms %9.3f ms %9.3f ms %10d" % (c, api,
      r["ttft"]["p50_ms"] - ttft, r["ttft"]["p99_ms"] - ttft, r["itl"]["p50_ms"] - itl, r["itl"]["p99_ms"] - itl,
      r["requests"] - r["succeeded"]))
PY
    done
done
