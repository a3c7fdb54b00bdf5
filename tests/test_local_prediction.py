"""This machine as a measured point: vazao's prediction for the shipped Gemma 3 270M Q4_K_M on
`--gpu local` beside what the real llama.cpp server (one thread, tests/conftest.py) does here.

The llama.cpp profile's `cpu-generic` values (engines.yaml) were measured on this project's build
machine (AMD EPYC Zen 4, 2 cores): 20.5–21.7 ms/token and TTFT 0.25 s for a 128-token prompt. The
host is probed right after the measurement, so a busy machine is slower in both."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = pytest.mark.llama_server

WORDS = ("river", "stone", "cloud", "window", "garden", "yellow", "seven", "market", "letter", "quiet",
         "mountain", "winter", "bread", "silver", "engine", "paper", "music", "orange", "forest", "candle",
         "bridge", "ocean", "pencil")


def _stream(url: str, prompt: str, max_tokens: int) -> tuple[float, list[float]]:
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True}).encode()
    req = urllib.request.Request(url + "/completions", data=body, headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    times = []
    with urllib.request.urlopen(req, timeout=120) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if line.startswith("data:") and line != "data: [DONE]":
                chunk = json.loads(line[5:])
                if chunk.get("choices") and chunk["choices"][0].get("text"):
                    times.append(time.perf_counter())
    return t0, times


def _prompt_tokens(url: str, prompt: str) -> int:
    body = json.dumps({"input": prompt}).encode()
    req = urllib.request.Request(url.removesuffix("/v1") + "/extras/tokenize", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return len(json.loads(r.read())["tokens"])


def test_llama_cpp_decode_and_ttft_on_this_host_match_the_prediction(llama_server, gemma_gguf):
    rng = random.Random(7)
    ttfts, itls = [], []
    for _ in range(3):  # a fresh prompt each time: the server's prompt cache would hide the prefill
        prompt = " ".join(rng.choice(WORDS) for _ in range(120))
        t0, times = _stream(llama_server.url, prompt, 48)
        assert len(times) >= 8, llama_server.death() or "too few tokens streamed"
        ttfts.append(times[0] - t0)
        itls.append((times[-1] - times[0]) / (len(times) - 1))
    n_prompt = _prompt_tokens(llama_server.url, prompt)
    # The prediction probes the host right after the measurement, with BLAS on one thread as the server is
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "vazao", "estimate", str(gemma_gguf), "--gpu", "local", "--batch", "1",
                          "--input", str(n_prompt), "--output", "48", "--json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)["rows"][0]
    itl, ttft = sorted(itls)[1], sorted(ttfts)[1]  # the median of three
    assert row["decode_step_s"] == pytest.approx(itl, rel=0.25), (row["decode_step_s"], itls)
    assert row["ttft_s"] == pytest.approx(ttft, rel=0.35), (row["ttft_s"], ttfts)
