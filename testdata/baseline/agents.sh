#!/bin/bash
# Multi-turn agent TTFT of docs/PERFORMANCE.md: the OpenVINO engine on npud's
# GenAI test library configured as an NPU, whose prefill is a cost model
# calibrated to published NPU figures (docs/OPENVINO.md), not a device.
# The library sleeps SCALE of each modelled cost (0.1: ten times faster than
# modelled); the figures printed are scaled back to modelled seconds.
#
#   bash testdata/baseline/agents.sh sizes       # 1 agent at 2k, 4k, 8k tokens, prefix caching on and off
#   bash testdata/baseline/agents.sh scheduler   # 8 agents growing 2k -> 8k: FIFO, affinity, affinity + linger
set -euo pipefail
cd "$(dirname "$0")/../.."
MODE="${1:-sizes}"
SCALE="${SCALE:-0.1}"
SIZES="${SIZES:-2048 4096 6144 8192}"
PORT="${PORT:-18020}"
work="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
make -s -C testdata/ovgenai >/dev/null
go build -o "$work/npud" .
mkdir -p "$work/models/agent" "$work/cache"
echo '<net/>' >"$work/models/agent/openvino_model.xml"
echo '{"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}' >"$work/models/agent/tokenizer_config.json"

# ms prints a duration of modelled milliseconds in real time.
ms() { python3 -c "print(f'{$1 * $SCALE:.0f}ms')"; }

serve() {
    OVTEST_DEVICES=NPU OVTEST_NPU_TIME_SCALE="$SCALE" "$work/npud" serve --engine openvino \
        --openvino-lib testdata/ovgenai/build --models-dir "$work/models" --cache-dir "$work/cache" \
        --device NPU --preload agent --listen "127.0.0.1:$PORT" --log-level warn "$@" & pid=$!
    # The listener is bound before the preload compiles, and a connection
    # waits in its backlog meanwhile: /health answers once npud serves.
    for _ in $(seq 600); do curl -sf -o /dev/null --max-time 600 "http://127.0.0.1:$PORT/health" && return; sleep 0.1; done
    echo "npud did not start" >&2
    exit 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }

# report prints one row: later turns' TTFT p50/p90 in modelled seconds.
report() {
    python3 - "$work/r.json" "$SCALE" "$@" <<'PY'
import json, sys
r, scale, label = json.load(open(sys.argv[1])), float(sys.argv[2]), sys.argv[3:]
t = r["ttft_later_turns"]
s = lambda ms: ms / 1000 / scale
print("%-40s %9.2f s %9.2f s %9.2f s %9.2f s %7d %6d %7.0f s" % (" ".join(label), s(t["p50_ms"]), s(t["p90_ms"]),
      s(r["ttft_first_turn"]["p50_ms"]), s(r["ttft"]["max_ms"]), r.get("later_turn_prompt_tokens_mean", 0),
      r["requests"] - r["succeeded"], s(r["seconds"] * 1000)))
PY
}

printf '%-40s %11s %11s %11s %11s %7s %6s %9s\n' run "turn2+ p50" "turn2+ p90" "turn1 p50" "worst TTFT" prompt errors wall
case "$MODE" in
sizes)
    # One agent: a task of SIZE - 200 tokens, then tool results of 16
    # tokens and answers of 16: turns 2 to 6 send histories of SIZE - 170
    # to SIZE - 20 tokens (the "prompt" column is the server's count).
    for caching in false true; do
        serve --npu-prefix-caching="$caching"
        for size in $SIZES; do
            "$work/npud" bench --url "http://127.0.0.1:$PORT" --model agent --concurrency 1 --turns 6 --requests 18 \
                --prompt-tokens $((size - 200)) --turn-tokens 16 --max-tokens 16 --timeout 30m --json >"$work/r.json"
            report "$size tokens, prefix caching $caching"
        done
        stop
    done
    ;;
scheduler)
    # Eight agents at once, each conversation growing from a 2k-token task
    # by 1k-token tool results to about 8k: 8 x 32 blocks of 256 tokens
    # is twice what NPUW's prefix cache keeps (128).
    for run in "fifo:--affinity-max-overtakes 0" "affinity:--affinity-linger 0" \
        "affinity+linger:--affinity-linger $(ms 250)"; do
        name="${run%%:*}"
        for caching in false true; do
            # shellcheck disable=SC2086 # the flags split on purpose
            serve --npu-prefix-caching="$caching" ${run#*:}
            "$work/npud" bench --url "http://127.0.0.1:$PORT" --model agent --concurrency 8 --turns 7 --requests 56 \
                --prompt-tokens 2048 --turn-tokens 1024 --max-tokens 32 --timeout 30m --json >"$work/r.json"
            report "$name, prefix caching $caching"
            stop
        done
    done
    ;;
*)
    echo "usage: $0 sizes|scheduler" >&2
    exit 2
    ;;
esac
