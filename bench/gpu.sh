#!/usr/bin/env bash
# The GPU benchmark, detached from the shell so that it outlives a time-limited remote command:
#   bash bench/gpu.sh start     # writes the ERNIE-0.3B-shaped model, starts the run in the background
#   bash bench/gpu.sh wait 540  # waits up to 540 s, then copies the results to $OUT (default bench/results)
set -u
results=/tmp/bench-results
case "${1:-}" in
  start)
    python3 scripts/make_tiny_model.py models/ernie-0.3b-random --full-size > /tmp/model.log 2>&1 \
      || { tail -20 /tmp/model.log; exit 4; }
    setsid nohup python3 -m bench.run --target gpu --model models/ernie-0.3b-random --out "$results" "${@:2}" \
      > /tmp/bench.out 2>&1 < /dev/null &
    echo "started $!" ;;
  wait)
    deadline=$((SECONDS + ${2:-540}))
    while pgrep -f "bench.run --target gpu" > /dev/null && [ $SECONDS -lt $deadline ]; do sleep 5; done
    cat /tmp/bench.out
    out=${OUT:-bench/results}
    mkdir -p "$out" && cp "$results"/* /tmp/bench.out "$out"/ 2>/dev/null
    pgrep -f "bench.run --target gpu" > /dev/null && echo "STILL RUNNING" || echo "FINISHED" ;;
  *) echo "usage: $0 start|wait [seconds]"; exit 2 ;;
esac
