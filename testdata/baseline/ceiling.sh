#!/bin/bash
# The ceiling comparison of docs/PERFORMANCE.md: delivered tokens/s from
# npud with a zero-latency simulated engine, from a bare Go net/http SSE
# writer, and from the FastAPI/uvicorn design, in one run, all driven by
# npud bench with the same load. SIM_ITL (default 0) paces the simulated
# engine: at 0 it outruns any writer and npud coalesces a whole answer into
# one chunk; a few tens of microseconds give one chunk per token. Needs
# python3-fastapi and python3-uvicorn.
#   CONCURRENCY=64 REQUESTS=4000 MAX_TOKENS=32 bash testdata/baseline/ceiling.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
CONCURRENCY="${CONCURRENCY:-64}"
REQUESTS="${REQUESTS:-4000}"
MAX_TOKENS="${MAX_TOKENS:-32}"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

go build -tags nomsgpack -o "$work/npud" .
go build -o "$work/baresse" ./testdata/baseline/baresse

"$work/npud" serve --listen 127.0.0.1:18000 --sim-ttft 0 --sim-itl "${SIM_ITL:-0}" --sim-prompt-token-cost 0 \
    --sim-slots 1024 --max-queue 4096 --heartbeat 0 --log-level warn 2>"$work/npud.log" & pids+=($!)
"$work/baresse" -listen 127.0.0.1:18001 & pids+=($!)
/usr/bin/python3 -m uvicorn fastapi_sse:app --app-dir testdata/baseline --host 127.0.0.1 --port 18002 \
    --log-level warning & pids+=($!)
for port in 18000 18001 18002; do
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
        sleep 0.1
    done
done

run() {
    "$work/npud" bench --url "$1" --api openai --model sim --concurrency "$CONCURRENCY" \
        --requests "$2" --prompt-tokens 8 --max-tokens "$MAX_TOKENS" --json
}
tokens() { sed -n 's/.*"output_tokens_per_second": \([0-9.]*\).*/\1/p'; }
itl() { python3 -c 'import json,sys; r=json.load(sys.stdin); print("%d ok, %d errors, %.1f chunks/request, ITL p50 %.3f ms p99 %.3f ms" % (r["succeeded"], r["requests"]-r["succeeded"], (r["itl"]["count"]+r["succeeded"])/max(r["succeeded"],1), r["itl"]["p50_ms"], r["itl"]["p99_ms"]))'; }

run http://127.0.0.1:18000 200 >/dev/null # warm up
npud_json="$(run http://127.0.0.1:18000 "$REQUESTS")"
bare_json="$(run http://127.0.0.1:18001 "$REQUESTS")"
fast_json="$(run http://127.0.0.1:18002 $((REQUESTS / 4)))" # it is slow; a quarter is plenty
npud_tps="$(tokens <<<"$npud_json")"
bare_tps="$(tokens <<<"$bare_json")"
fast_tps="$(tokens <<<"$fast_json")"
echo "concurrency $CONCURRENCY, $MAX_TOKENS tokens per request, npud engine ITL ${SIM_ITL:-0}"
printf '%-22s %12.0f tokens/s   %s\n' "npud (sim, 0 latency)" "$npud_tps" "$(itl <<<"$npud_json")"
printf '%-22s %12.0f tokens/s   %s\n' "bare net/http writer" "$bare_tps" "$(itl <<<"$bare_json")"
printf '%-22s %12.0f tokens/s   %s\n' "FastAPI/uvicorn design" "$fast_tps" "$(itl <<<"$fast_json")"
python3 -c "print('npud / bare writer = %.2f   npud / FastAPI = %.1f' % ($npud_tps / $bare_tps, $npud_tps / $fast_tps))"
