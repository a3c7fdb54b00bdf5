#!/usr/bin/env bash
# Installs the real llama.cpp server the bench tests drive (llama-cpp-python[server], pinned) into a venv,
# from a wheel built here with fixed CPU flags, never from pip's cache.
#
# Why: pip builds llama.cpp with -march=native by default, and machines of the same kind differ in CPU.
# On one that reports AMX, the native build dies (SIGSEGV at ldtilecfg in ggml's AMX kernel) on its first
# completion. pip's wheel cache is keyed by the source archive, not by CMAKE_ARGS, so a cached native
# wheel would be reused whatever flags are set. So the wheel is built with --no-cache-dir and kept in a
# folder keyed by version, flags, Python and platform: a build with other flags can never be picked up.
#
# Flags: never native, never AMX. AVX2/FMA/F16C always; AVX-512 (and its VBMI/VNNI/BF16 parts) only
# where /proc/cpuinfo reports it: 49.4 against 44.6 tok/s on one thread, 72.6 against 64.7 on two,
# decoding the Gemma 3 270M on an AMD EPYC (bench/llama_tokps.py). The flags are part of the wheel
# folder's key, so a CPU with other features builds its own wheel.
set -euo pipefail
VENV=${1:?usage: install-llama-server.sh VENV}
PY="$VENV/bin/python"
VERSION=0.3.36
CONSTRAINTS="$(cd "$(dirname "$0")/.." && pwd)/constraints/llama-server.txt"
has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }
on_if() { if has "$1"; then echo ON; else echo OFF; fi; }
case "$(uname -m)" in
  x86_64|amd64)
    FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    if has avx512f && has avx512bw && has avx512vl && has avx512dq; then
      FLAGS="$FLAGS -DGGML_AVX512=ON -DGGML_AVX512_VBMI=$(on_if avx512vbmi)"
      FLAGS="$FLAGS -DGGML_AVX512_VNNI=$(on_if avx512_vnni) -DGGML_AVX512_BF16=$(on_if avx512_bf16)"
    else
      FLAGS="$FLAGS -DGGML_AVX512=OFF"
    fi
    FLAGS="$FLAGS -DGGML_AVX_VNNI=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF";;
  *) FLAGS="-DGGML_NATIVE=OFF";;
esac
TAG=$("$PY" -c 'import sys, sysconfig; print(f"cp{sys.version_info[0]}{sys.version_info[1]}-{sysconfig.get_platform()}")')
KEY=$(printf '%s\n' "$VERSION" "$FLAGS" "$TAG" | sha256sum | cut -c1-16)
WHEELS="${VAZAO_WHEEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vazao/wheels}/llama-cpp-python-$VERSION-$KEY"
STAMP="$VENV/.llama-server-$KEY"

if [ -f "$STAMP" ] && "$PY" -c 'import llama_cpp' 2>/dev/null; then
  exit 0
fi
WHEEL=$(ls "$WHEELS"/llama_cpp_python-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$WHEEL" ]; then
  echo "building llama-cpp-python $VERSION (llama.cpp with $FLAGS); once per machine, a few minutes" >&2
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  CMAKE_ARGS="$FLAGS" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" FORCE_CMAKE=1 \
    "$PY" -m pip wheel -q --no-cache-dir --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$VERSION" -w "$TMP"
  mkdir -p "$WHEELS"
  mv "$TMP"/llama_cpp_python-*.whl "$WHEELS"/  # the folder holds a wheel only once it is whole
  WHEEL=$(ls "$WHEELS"/llama_cpp_python-*.whl | head -n1)
fi
# --force-reinstall of the wheel alone: a native build already in the venv is replaced, not kept.
"$PY" -m pip install -q --force-reinstall --no-deps "$WHEEL"
"$PY" -m pip install -q -c "$CONSTRAINTS" "llama-cpp-python[server]==$VERSION"
rm -f "$VENV"/.llama-server-*
touch "$STAMP"
