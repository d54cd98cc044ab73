#!/usr/bin/env bash
# The whole app path beside our engine layer on the GPU, and where the chat server's time goes:
#   bash bench/gpu/app-path.sh MODEL RESULTS [BEFORE_TREE]
# runs `bench.run` for `ours:4gb` and `app path:4gb`, then `bench.profile_app` (py-spy, 32 chats). With
# BEFORE_TREE (another checkout of the app, carrying this bench/ and harness/), its app path and profile too,
# in the same run. Started detached by `bash bench/gpu/run.sh app [BEFORE_TREE]`.
set -u
model=$(realpath "$1"); results=$2; before=${3:-}
python3 -m bench.run --target gpu --model "$model" --out "$results" --only "ours:4gb,app path:4gb"
python3 -m bench.profile_app --model "$model" --preset 4gb --chats 32 --seconds 15 --label after --out "$results"
if [ -n "$before" ]; then
  cd "$before" || exit 1
  python3 -m bench.run --target gpu --model "$model" --out "$results/before" --only "app path:4gb"
  python3 -m bench.profile_app --model "$model" --preset 4gb --chats 32 --seconds 15 --label before --out "$results"
fi
