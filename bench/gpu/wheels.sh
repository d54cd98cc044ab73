#!/usr/bin/env bash
# The app's packages that the GPU machine's bundles (../shared/gpu: vLLM in .gpuB, Chainlit in .gpuC) lack:
# the chat history's SQLAlchemy, aiosqlite and greenlet, uvicorn's websockets and httptools, vLLM's serve
# extras, py-spy for `bench.profile_app`, pytest with its plugins (tests/test_vllm_seams.py against the GPU's
# vLLM), and FlashInfer 0.6.14 as a user's GPU install has it (the sampler of the app's GPU engines; less
# NVIDIA's CuTe DSL, 88 MB that FlashInfer imports only where it is installed and its sampler never uses).
# Without them `chainlit run app.py` exits at import there ("No module named 'sqlalchemy'"), so every app-path
# configuration fails.
#   bash bench/gpu/wheels.sh      # here (PyPI needed): writes .gpuP/ (~30 MiB), wheels for Python 3.12
# There, in a call of its own (with .gpuB the carry limit would be passed):
#   carry [".gpuP"]: mkdir -p /tmp/stash/wheels && cp .gpuP/*.whl /tmp/stash/wheels/
# `bash bench/gpu/run.sh start|app` installs them into /tmp/site when they are there.
set -eu
cd "$(dirname "$0")/../.."
mkdir -p .gpuP
grep -qx "/.gpuP/" .git/info/exclude 2>/dev/null || echo "/.gpuP/" >> .git/info/exclude
platforms=()
for n in 17 24 27 28; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .gpuP \
  sqlalchemy==2.1.9 aiosqlite==0.22.1 greenlet==3.5.6 websockets==17.4 httptools==0.9.0 \
  jmespath==1.1.0 model_hosting_container_standards==0.1.16 py-spy==0.4.3 \
  pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 pytest-asyncio==1.5.0 pytest-timeout==2.4.0 \
  flashinfer-python==0.6.14 cuda-tile==1.7.0 nvidia-cudnn-frontend==1.28.0
ls .gpuP
