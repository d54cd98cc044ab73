#!/usr/bin/env bash
# The GPU benchmarks, detached from the shell so that they outlive a time-limited remote command:
#   bash bench/gpu/run.sh start     # writes the ERNIE-0.3B-shaped model, starts `bench.run` in the background
#   bash bench/gpu/run.sh cards     # the same for `bench.cards` (small cards simulated on this GPU)
#   bash bench/gpu/run.sh app [TREE] # the same for `bench/gpu/app-path.sh` (app path beside the engine layer, profiles)
#   bash bench/gpu/run.sh peers     # builds llama.cpp with CUDA (sources carried to /tmp/stash/llama-src.tar.gz),
#                               # then `bench.peers --target gpu`
#   bash bench/gpu/run.sh startup   # `bench.startup`: the app's start as a timeline, twice (a fresh machine's first is cold),
#                               # with py-spy on the server and its engine processes
#   bash bench/gpu/run.sh remote    # `bench.remote --target gpu`: vllm serve alone and through 1 and 2 app processes
#   bash bench/gpu/run.sh idle      # `bench.idle` (4gb and 8gb asleep and awake, 20 cycles, memory taken meanwhile),
#                               # then `bench.orphans` (the app ended during its GPU engine's build)
#   bash bench/gpu/run.sh alone     # as a user's install has it (FlashInfer, bytecode, setup.sh's `engine.machine_cache`):
#                               # `bench.startup` on the fresh machine and warm, the peers with llama.cpp (on
#                               # weights sharpened as a trained model's); Dec 3's run then took `bench.step_time`,
#                               # which runs from a checkout of commit 75a5bb3 (docs/benchmarks.md)
#   bash bench/gpu/run.sh fresh     # as `alone` installs, on a fresh machine: setup.sh's `engine.machine_cache`, then
#                               # `bench.startup` twice (the first start, a second), in the foreground
#   bash bench/gpu/run.sh wait 540  # waits up to 540 s, then copies the results to $OUT (default bench/results)
#   bash bench/gpu/run.sh collect 540 # the same, the results packed into one $OUT/results.tgz
# The app path needs the wheels of bench/gpu/wheels.sh there too.
set -u
results=/tmp/bench-results
model=models/ernie-0.3b-random
running() { pgrep -f "bench.(run --target gpu|cards --model|peers|startup|remote|idle|orphans)|bench/gpu/app-path.sh|llama_cpp.sh|gpu-alone" > /dev/null; }
install_wheels() {  # the app's packages the bundles lack (bench/gpu/wheels.sh), when carried to /tmp/stash/wheels
  ls /tmp/stash/wheels/*.whl > /dev/null 2>&1 || return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    /tmp/stash/wheels/*.whl
}
use_flashinfer() {  # device-setup.sh turns FlashInfer's sampler off; a user's install has it (bench/gpu/wheels.sh)
  if python3 -c "from vllm.v1.attention.backends.flashinfer import FlashInferBackend" 2> /tmp/flashinfer.log; then
    unset VLLM_USE_FLASHINFER_SAMPLER
  else
    echo "FlashInfer does not import here: vLLM's own sampler"; tail -3 /tmp/flashinfer.log
  fi
}
as_installed() {  # the bundles as a user's setup.sh leaves an install: FlashInfer, bytecode; and the model
  install_wheels
  use_flashinfer
  python3 -m compileall -q -j 16 /tmp/site /tmp/site-ui "$(python3 -c 'import os, transformers as t; print(os.path.dirname(t.__file__))')" \
    "$(python3 -c 'import os, torch as t; print(os.path.dirname(t.__file__))')" > /dev/null 2>&1
  make_model
}
make_model() {
  [ -f $model/model.safetensors ] && return
  python3 scripts/make_tiny_model.py $model --full-size > /tmp/model.log 2>&1 || { tail -20 /tmp/model.log; exit 4; }
}
case "${1:-}" in
  start|cards)
    install_wheels
    make_model
    if [ "$1" = start ]; then what=(bench.run --target gpu); else what=(bench.cards); fi
    setsid nohup python3 -m "${what[@]}" --model $model --out "$results" "${@:2}" > /tmp/bench.out 2>&1 < /dev/null &
    echo "started $!" ;;
  peers)
    install_wheels
    make_model
    mkdir -p /tmp/llama-src && tar -xzf /tmp/stash/llama-src.tar.gz -C /tmp/llama-src 2>/dev/null
    # the build runs beside the first rows, at the lowest priority; the llama.cpp rows wait for it (a lock)
    LLAMA_CUDA=1 LLAMA_CPP_SOURCE=/tmp/llama-src setsid nohup nice -n 19 bash -c "time bash bench/llama_cpp.sh" \
      > /tmp/llama-build.log 2>&1 < /dev/null &
    sleep 1
    LLAMA_CUDA=1 setsid nohup python3 -m bench.peers --target gpu --model $model --out $results "${@:2}" \
      > /tmp/bench.out 2>&1 < /dev/null &
    echo "started $!" ;;
  startup)
    install_wheels
    make_model
    PATH=/tmp/site/bin:$PATH setsid nohup python3 -m bench.startup --model $model --runs 2 --profile --out $results \
      "${@:2}" > /tmp/bench.out 2>&1 < /dev/null &
    echo "started $!" ;;
  remote)
    install_wheels
    make_model
    setsid nohup python3 -m bench.remote --target gpu --model $model --out $results "${@:2}" \
      > /tmp/bench.out 2>&1 < /dev/null &
    echo "started $!" ;;
  idle)
    install_wheels
    make_model
    setsid nohup bash -c "python3 -m bench.idle --model $model --presets 4gb,8gb --cycles 20 --take --out $results; \
      python3 -m bench.orphans --model $model --preset 4gb --tries 2 --moments build --out $results" \
      > /tmp/bench.out 2>&1 < /dev/null &
    echo "started $!" ;;
  app)
    install_wheels
    make_model
    setsid nohup bash bench/gpu/app-path.sh $model "$results" "${@:2}" > /tmp/bench.out 2>&1 < /dev/null &
    echo "started $!" ;;
  fresh)
    as_installed
    time python3 -m engine.machine_cache
    PATH=/tmp/site/bin:$PATH python3 -m bench.startup --model $model --runs 2 --profile --out $results "${@:2}"
    out=${OUT:-bench/results}; mkdir -p "$out" && tar czf "$out/results.tgz" -C /tmp bench-results ;;
  alone)
    as_installed
    mkdir -p /tmp/llama-src && tar -xzf /tmp/stash/llama-src.tar.gz -C /tmp/llama-src 2>/dev/null
    # llama.cpp builds on the machine's second half of cores meanwhile, the measured work runs on the first
    cat > /tmp/gpu-alone.sh << ALONE
set -x
pin() { cores=\$1; shift; if command -v taskset > /dev/null; then taskset -c \$cores "\$@"; else "\$@"; fi; }
LLAMA_CUDA=1 LLAMA_CPP_SOURCE=/tmp/llama-src LLAMA_JOBS=8 pin 8-15 nice -n 19 bash bench/llama_cpp.sh > /tmp/llama-build.log 2>&1 &
time pin 0-7 python3 -m engine.machine_cache
pin 0-7 python3 -m bench.startup --model $model --runs 2 --profile --out $results
LLAMA_CUDA=1 pin 0-7 python3 -m bench.peers --target gpu --model $model --sharpen 6 --out $results \
  --only "this app: chat,this app: engine layer,this app: engine layer without FlashInfer,llama.cpp bf16,llama.cpp Q8_0"
ALONE
    PATH=/tmp/site/bin:$PATH setsid nohup bash /tmp/gpu-alone.sh > /tmp/bench.out 2>&1 < /dev/null &
    echo "started $!" ;;
  wait|collect)
    deadline=$((SECONDS + ${2:-540}))
    while running && [ $SECONDS -lt $deadline ]; do sleep 5; done
    cat /tmp/bench.out
    out=${OUT:-bench/results}
    if [ "$1" = collect ]; then
      mkdir -p "$out" && tar czf "$out/results.tgz" -C /tmp bench-results bench.out $(cd /tmp && ls llama-build.log 2>/dev/null)
    else
      mkdir -p "$out" && cp -r "$results"/* /tmp/bench.out "$out"/ 2>/dev/null
    fi
    running && echo "STILL RUNNING" || echo "FINISHED" ;;
  *) echo "usage: $0 start|cards|app|peers|startup|remote|idle|alone|fresh|wait|collect [seconds]"; exit 2 ;;
esac
