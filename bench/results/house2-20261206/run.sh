#!/usr/bin/env bash
# house2's before/after: start-up and one chat's speed on this processor, alternated before, after, before, after.
set -u
OUT=${OUT:-/work/main/bench/results/house2-20261206}
PY=/work/main/.venv/bin/python
MODEL=/work/main/models/ernie-full
mkdir -p "$OUT"
{ lscpu | grep -i "model name"; nproc; uptime; echo "before: $(git -C /tmp/before log --oneline -1)"; echo "after: $(git -C /tmp/after log --oneline -1)"; } > "$OUT/machine.txt"
cd /tmp/after
for i in 1 2 3; do
  echo "== pair $i $(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"
  $PY -m bench.peers --target cpu-full --model $MODEL --before /tmp/before --concurrency 1 --only "this app: chat, before;" --out "$OUT/chat-before-$i" 2>&1 | grep -A3 "^| config"
  $PY -m bench.peers --target cpu-full --model $MODEL --concurrency 1 --only "this app: chat;" --out "$OUT/chat-after-$i" 2>&1 | grep -A3 "^| config"
done
for i in 1 2 3; do
  echo "== start pair $i $(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"
  $PY -m bench.startup --model $MODEL --preset cpu --runs 1 --tree /tmp/before --out "$OUT/start-before-$i" 2>&1 | grep "^== start"
  $PY -m bench.startup --model $MODEL --preset cpu --runs 1 --tree /tmp/after --out "$OUT/start-after-$i" 2>&1 | grep "^== start"
done
echo "== done $(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"
uptime >> "$OUT/machine.txt"
