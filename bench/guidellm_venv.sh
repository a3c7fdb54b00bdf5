#!/usr/bin/env bash
# Builds a throwaway venv holding guidellm for bench/guidellm_compare.py. guidellm is never a
# dependency of vazao: this venv lives outside the repository (default /tmp/guidellm-venv) and
# never touches .venv or pyproject.toml.
#
# torch goes in first, pinned to the CPU build on this machine's disk (2.13.0): left to itself,
# guidellm's resolution pulls a ~6 GB CUDA build. guidellm 0.8.1 accepts that torch as it is.
# gguf lets transformers read the tokenizer out of the GGUF (no model hub here).
set -euo pipefail
VENV=${GUIDELLM_VENV:-/tmp/guidellm-venv}
GUIDELLM_SPEC=${GUIDELLM_SPEC:-guidellm==0.8.1}
PY=${PYTHON:-python3}
if [ -x "$VENV/bin/guidellm" ] && "$VENV/bin/python" -c "import gguf" 2>/dev/null; then
  echo "guidellm venv ready: $VENV"; exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
# pip repeats a warning for each local index folder it cannot find: keep stderr, less that line
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
quiet "$VENV/bin/pip" install -q --upgrade pip
quiet "$VENV/bin/pip" install -q "torch==2.13.0"
# torch==2.13.0 on this line too: the resolver keeps the installed CPU build instead of upgrading it
quiet "$VENV/bin/pip" install -q "$GUIDELLM_SPEC" gguf "torch==2.13.0"
"$VENV/bin/guidellm" --version
"$VENV/bin/python" -c "import torch, gguf; print('torch', torch.__version__)"
echo "guidellm venv ready: $VENV"
