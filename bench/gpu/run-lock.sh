#!/usr/bin/env bash
# The GPU lock's own run on the GPU test machine (H100 or H200), detached so that it outlives a time-limited remote command. Needs the lock
# installed there (bench/gpu/bundle-lock.sh here, then `source bench/gpu/setup-lock.sh` there).
#   bash bench/gpu/run-lock.sh start        # starts the steps below in the background
#   bash bench/gpu/run-lock.sh start server fair  # only these steps (and versions, always), e.g. again after a fix
#   bash bench/gpu/run-lock.sh collect 540  # waits up to 540 s, prints the progress, packs $OUT/results-lock.tgz
# Steps, in this order, each logged in /tmp/bench-lock/<step>.log:
#   versions  every package the lock pins, its version there beside the lock's (`python -m harness.locks compare`)
#   cache     what setup.sh runs after installing: `python -m engine.machine_cache` (FlashInfer's sampling kernels)
#   engine    the engine's GPU paths as tests: tests/test_engine_imports.py (what the engine core imports to build
#             the model), tests/test_gpu_host.py (spawned core, GPU memory, sleep mode, Stop, switch, kill,
#             shutdown), tests/test_vllm_seams.py, tests/test_engine_states.py (CHAT_TEST_DEVICE=cuda)
#   server    real `chainlit run` servers on the GPU: a chat with its progress, Stop, a preset switch
#             (tests/test_app.py), the OpenAI API (tests/test_openai_api.py), sleep and wake through the app
#             (tests/test_idle.py)
#   fair      the fair-share benchmark on the `4gb` preset with a model of the real size (bench/fair_share.py: user
#             A floods the API while user B chats, before and after the shares), its JSON and plot in /tmp/bench-lock
set -u
results=/tmp/bench-lock
running() { pgrep -f "gpu/run-lock.sh steps" > /dev/null; }
case "${1:-}" in
  start)
    mkdir -p $results
    setsid nohup bash bench/gpu/run-lock.sh steps "${@:2}" > $results/steps.out 2>&1 < /dev/null &
    echo "started $!" ;;
  steps)
    mkdir -p $results
    wanted=" ${*:2} "
    want() { [ "$wanted" = "  " ] || [[ $wanted == *" $1 "* ]]; }
    log() { echo "$(date -u +%H:%M:%S) $*" | tee -a $results/progress.log; }
    tests() {  # tests STEP PYTEST-ARGS...
      log "$1: start"
      CHAT_TEST_DEVICE=cuda python -m pytest -p no:cacheprovider -rA "${@:2}" > $results/$1.log 2>&1
      log "$1: exit $? ($(grep -E '^=+ .*(passed|failed)' $results/$1.log | tail -1))"
    }
    log "versions: $(python -m harness.locks compare gpu > $results/versions.log 2>&1; tail -1 $results/versions.log)"
    if want cache; then
      log "cache: start"
      python -m engine.machine_cache > $results/cache.log 2>&1
      log "cache: exit $?"
    fi
    [ -f models/tiny-ernie/model.safetensors ] || python scripts/make_tiny_model.py models/tiny-ernie > $results/model.log 2>&1
    want engine && tests engine tests/test_engine_imports.py tests/test_gpu_host.py tests/test_vllm_seams.py tests/test_engine_states.py
    want server && tests server tests/test_app.py tests/test_openai_api.py tests/test_idle.py -k "first_chat or stop_ends_the_reply \
      or preset_switch_rebuilds or settings_change or lists_the_model or share_the_engine or through_the_app"
    [ -f models/ernie-full/model.safetensors ] || \
      python scripts/make_tiny_model.py models/ernie-full --full-size > $results/model-full.log 2>&1
    if want fair; then
      log "fair: start"
      python -m bench.fair_share --model models/ernie-full --preset 4gb --repeat 2 --out $results > $results/fair.log 2>&1
      log "fair: exit $? ($(tail -1 $results/fair.log))"
    fi
    log "all done" ;;
  collect)
    deadline=$((SECONDS + ${2:-540}))
    while running && [ $SECONDS -lt $deadline ]; do sleep 5; done
    cat $results/progress.log 2> /dev/null
    out=${OUT:-bench/results}
    mkdir -p "$out" && tar czf "$out/results-lock.tgz" -C /tmp bench-lock
    running && echo "STILL RUNNING" || echo "FINISHED" ;;
  *) echo "usage: $0 start|collect [seconds]"; exit 2 ;;
esac
