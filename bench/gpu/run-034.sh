#!/usr/bin/env bash
# vLLM 0.34.0 beside 0.26.0 on one H200 machine, detached from the shell so that it outlives a time-limited
# remote command. Needs both installs there: `source .gpuB/device-setup.sh` (0.26 into /tmp/site) and
# `source bench/gpu/setup-034.sh` (0.34 into /tmp/site034; bench/gpu/bundle-034.sh says how the parts get there).
#   bash bench/gpu/run-034.sh start [STEPS]   # starts the steps below in the background (default: all, in this order)
#   bash bench/gpu/run-034.sh collect 540     # waits up to 540 s, prints the progress, packs $OUT/results-034.tgz
# Steps (each configuration in a process of its own; both versions without FlashInfer, whose kernels are not
# built here, so both sample with vLLM's own sampler, as the app does until engine/machine_cache built them):
#   layer34   `bench.peers --target gpu --sharpen 6 --only "this app: engine layer"` on 0.34: does a 0.34 engine
#             start and stream through the app's engine layer (4gb preset), one / 8 / 32 chats
#   layer26   the same on 0.26
#   chat34    `bench.peers ... --only "this app: chat"` on 0.34 (a real `chainlit run` server, socket.io clients)
#   chat26    the same on 0.26
#   startup34 `bench.startup --runs 2` on 0.34 (launch -> first token through a real server; warm by then)
#   idle34    `bench.idle --presets 4gb --cycles 5 --take`, then `bench.orphans --preset 4gb --tries 2 --moments
#             build`, on 0.34
#   peers34   `bench.peers --only "this app: engine layer;this app: chat;llama.cpp bf16"` on 0.34 with llama.cpp's
#             CUDA build (sources in /tmp/stash/llama-src.tar.gz; built on cores 8-15 from the first step on, the
#             steps run on cores 0-7)
#   profile34 `bench.startup --runs 2 --profile` on 0.34: py-spy on the server and its engine through the start
#   tests34   the engine's GPU paths as tests on 0.34: tests/test_gpu_host.py (spawned core, GPU memory, sleep mode,
#             Stop, switch, kill, shutdown) with `CHAT_TEST_DEVICE=cuda`, and tests/test_vllm_seams.py and
#             tests/test_engine_states.py against the GPU's vLLM (the tiny model from /tmp/stash/tiny-ernie when
#             carried there, else made there)
# Dec 4's run also had options34, step34 and alt34 (`bench.engine_options`, `bench.step_time`, one-off
# experiments): they run from a checkout of commit 75a5bb3, whose bench/gpu-034.sh has those steps.
# Results: /tmp/bench-034/<step>/, progress in /tmp/bench-034/progress.log.
set -u
results=/tmp/bench-034
model=models/ernie-0.3b-random
all="layer34 layer26 chat34 chat26 startup34 idle34"
running() { pgrep -f "gpu/run-034.sh steps" > /dev/null; }
case "${1:-}" in
  start)
    mkdir -p $results
    setsid nohup bash bench/gpu/run-034.sh steps "${2:-$all}" > $results/steps.out 2>&1 < /dev/null &
    echo "started $!" ;;
  steps)
    V034_ENV_ONLY=1 source bench/gpu/setup-034.sh  # defines use_vllm_034 / use_vllm_026, installs nothing
    # the app's wheels (.gpuP) for 0.26 too, less FlashInfer: both versions sample with vLLM's own sampler
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      $(ls /tmp/stash/wheels/*.whl | grep -v -E '/(flashinfer_python|cuda_tile|nvidia_cudnn_frontend)-') \
      > /dev/null 2>&1
    log() { echo "$(date -u +%H:%M:%S) $*" | tee -a $results/progress.log; }
    pin() { if command -v taskset > /dev/null; then taskset -c "$@"; else "${@:2}"; fi; }
    case " $2 " in *" peers34 "*)
      mkdir -p /tmp/llama-src && tar -xzf /tmp/stash/llama-src.tar.gz -C /tmp/llama-src 2> /dev/null
      LLAMA_CUDA=1 LLAMA_CPP_SOURCE=/tmp/llama-src LLAMA_JOBS=8 pin 8-15 nice -n 19 bash bench/llama_cpp.sh \
        > $results/llama-build.log 2>&1 &
      taskset -cp 0-7 $$ > /dev/null 2>&1 ;;  # the measured steps on the other half of the cores
    esac
    peers() {  # peers STEP ROW
      mkdir -p $results/$1
      log "$1: start ($(python3 -c 'import vllm; print("vllm", vllm.__version__)' 2>&1 | tail -1))"
      python3 -m bench.peers --target gpu --model $model --sharpen 6 --timeout 420 --out $results/$1 --only "$2" \
        > $results/$1/stdout.log 2>&1
      log "$1: exit $?"
    }
    for step in $2; do
      case $step in
        *34) use_vllm_034 ;;
        *26) use_vllm_026 ;;
      esac
      case $step in
        layer34|layer26) peers $step "this app: engine layer" ;;
        chat34|chat26) peers $step "this app: chat" ;;
        startup34)
          mkdir -p $results/$step; log "$step: start"
          PATH=/tmp/site/bin:$PATH python3 -m bench.startup --model $model --runs 2 --out $results/$step \
            > $results/$step/stdout.log 2>&1
          log "$step: exit $?" ;;
        peers34)
          mkdir -p $results/$step
          log "$step: start ($(python3 -c 'import vllm; print("vllm", vllm.__version__)' 2>&1 | tail -1))"
          LLAMA_CUDA=1 python3 -m bench.peers --target gpu --model $model --sharpen 6 --timeout 420 \
            --out $results/$step --only "this app: engine layer;this app: chat;llama.cpp bf16" \
            > $results/$step/stdout.log 2>&1
          log "$step: exit $?" ;;
        profile34)
          mkdir -p $results/$step; log "$step: start"
          PATH=/tmp/site034/bin:/tmp/site/bin:$PATH python3 -m bench.startup --model $model --runs 2 --profile \
            --out $results/$step > $results/$step/stdout.log 2>&1
          log "$step: exit $?" ;;
        tests34)
          mkdir -p $results/$step models; log "$step: start"
          [ -d models/tiny-ernie ] || cp -r /tmp/stash/tiny-ernie models/ 2> /dev/null
          CHAT_TEST_DEVICE=cuda python3 -m pytest tests/test_gpu_host.py tests/test_vllm_seams.py \
            tests/test_engine_states.py -p no:cacheprovider -rA > $results/$step/stdout.log 2>&1
          log "$step: exit $?" ;;
        idle34)
          mkdir -p $results/$step; log "$step: start"
          python3 -m bench.idle --model $model --presets 4gb --cycles 5 --take --out $results/$step \
            > $results/$step/stdout.log 2>&1
          log "$step: idle exit $?"
          python3 -m bench.orphans --model $model --preset 4gb --tries 2 --moments build --out $results/$step \
            > $results/$step/orphans.log 2>&1
          log "$step: orphans exit $?" ;;
      esac
    done
    log "all done" ;;
  collect)
    deadline=$((SECONDS + ${2:-540}))
    while running && [ $SECONDS -lt $deadline ]; do sleep 5; done
    cat $results/progress.log 2> /dev/null
    current=$(ls -td $results/*/ 2> /dev/null | head -1)
    [ -n "$current" ] && { echo "--- $current"; tail -c 3000 "$current/stdout.log" 2> /dev/null; }
    out=${OUT:-bench/results}
    mkdir -p "$out" && tar czf "$out/results-034.tgz" --exclude='*.db' -C /tmp bench-034 \
      $(cd /tmp && ls gpu-setup-034.log 2> /dev/null)
    running && echo "STILL RUNNING" || echo "FINISHED" ;;
  *) echo "usage: $0 start [STEPS]|collect [seconds]"; exit 2 ;;
esac
