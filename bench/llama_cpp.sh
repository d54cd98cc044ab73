#!/usr/bin/env bash
# llama.cpp's `llama-server` (the engine under Ollama and LM Studio) for the peers benchmark, built from
# the llama.cpp sources that PyPI's llama-cpp-python sdist carries, with its HF-to-GGUF converter beside it.
#   bash bench/llama_cpp.sh            # prints the folder: bin/llama-server, convert_hf_to_gguf.py, gguf-py/
#   LLAMA_CUDA=1 bash bench/llama_cpp.sh   # a CUDA build (nvcc on PATH)
#   LLAMA_CPP_SOURCE=DIR bash bench/llama_cpp.sh   # from llama.cpp sources unpacked there (a machine without PyPI)
#   LLAMA_ISA=avx2 bash bench/llama_cpp.sh     # for AVX2 only, as most desktop processors are (no AVX-512), to
#                                              # run beside vLLM limited to AVX2 on an AVX-512 machine
# The build is cached under ~/.cache/ernie-chat/llama.cpp/<version>[-cuda]; a second call returns at once.
# On this 2-core machine the CPU build takes about 10 minutes.
set -euo pipefail
version=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
flavour=cpu
[ "${LLAMA_CUDA:-0}" = 1 ] && flavour=cuda
[ "${LLAMA_ISA:-native}" = avx2 ] && flavour=cpu-avx2
home=${LLAMA_CPP_HOME:-$HOME/.cache/ernie-chat/llama.cpp}/$version-$flavour
mkdir -p "$home"
exec 9> "$home.lock"
flock 9  # one build at a time: a second call waits for it, then finds it done
if [ -x "$home/bin/llama-server" ]; then echo "$home"; exit 0; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=${LLAMA_CPP_SOURCE:-}
if [ -z "$src" ]; then
  sdist="$home/llama_cpp_python-$version.tar.gz"
  [ -f "$sdist" ] || python3 -m pip download -q --no-deps --no-binary :all: -d "$home" "llama-cpp-python==$version" >&2
  tar -xzf "$sdist" -C "$work"
  src="$work/llama_cpp_python-$version/vendor/llama.cpp"
fi
options=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
         -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=ON)
[ $flavour = cuda ] && options+=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90})
[ $flavour = cpu-avx2 ] && options+=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
                                     -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF)
cmake -S "$src" -B "$work/build" "${options[@]}" >&2
cmake --build "$work/build" --target llama-server llama-quantize -j "${LLAMA_JOBS:-$(nproc)}" >&2
mkdir -p "$home/bin"
cp "$work/build/bin/llama-server" "$work/build/bin/llama-quantize" "$home/bin/"
rm -rf "$home/convert" && mkdir -p "$home/convert"
cp -r "$src/convert_hf_to_gguf.py" "$src/conversion" "$src/gguf-py" "$home/convert/"
echo "$home"
