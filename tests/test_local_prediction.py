"""This machine as a measured point: vazao's prediction for the shipped Gemma 3 270M Q4_K_M on
`--gpu local` beside what the real llama.cpp server (one thread, tests/conftest.py) does here.

The llama.cpp profile's per-vendor values (engines.yaml, `cpu-amd`, `cpu-amd-zen5`, `cpu-amd-avx2` and `cpu-intel`;
catalog/local.py picks one by /proc/cpuinfo's vendor_id and flags) were measured on this project's build machines,
2 cores, quiet: AMD EPYC Zen 4 21.8–27.6 ms/token and a 121-token prompt 0.79 s past a 4-word prompt's TTFT; Intel
Xeon 34–38 ms/token and 0.75 s; AMD EPYC Zen 5 12.8–15.6 ms/token and 0.46 s; AMD EPYC Zen 3 (family 25 model 1,
AVX2 only) 27.8–53.6 ms/token and 1.14–2.50 s, its speed moving from minute to minute with its probe's (57–91
GFLOP/s). The host is probed right after the measurement, so a busy machine is slower in both."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import urllib.request
import warnings

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


def _predict(gemma_gguf, n_prompt: int) -> dict:
    """vazao estimate on `--gpu local`, the host probed now, BLAS on one thread as the server is."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "vazao", "estimate", str(gemma_gguf), "--gpu", "local", "--batch", "1",
                          "--input", str(n_prompt), "--output", "48", "--json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["rows"][0]


def test_llama_cpp_decode_and_prefill_on_this_host_match_the_prediction(llama_server, gemma_gguf):
    """Decode: the inter-token latency. Prefill: TTFT of a 121-token prompt less TTFT of a 4-word one,
    both through the server in the same minute, so the Python server's own per-request work (which
    grows on a loaded machine) cancels and what is compared is the host's prefill."""
    rng = random.Random(7)
    ttfts, shorts, itls = [], [], []
    for _ in range(5):  # fresh prompts each time: the server's prompt cache would hide the prefill
        t0, times = _stream(llama_server.url, " ".join(rng.choice(WORDS) for _ in range(4)), 1)
        assert times, llama_server.death() or "no token streamed"
        shorts.append(times[0] - t0)
        prompt = " ".join(rng.choice(WORDS) for _ in range(120))
        t0, times = _stream(llama_server.url, prompt, 48)
        assert len(times) >= 8, llama_server.death() or "too few tokens streamed"
        ttfts.append(times[0] - t0)
        itls.append((times[-1] - times[0]) / (len(times) - 1))
    n_long = _prompt_tokens(llama_server.url, prompt)
    n_short = _prompt_tokens(llama_server.url, "river stone cloud window")
    long_row, short_row = _predict(gemma_gguf, n_long), _predict(gemma_gguf, n_short)
    # best of five, as the probe keeps the best of its tries: on a loaded machine both are then the
    # least disturbed figure
    itl, prefill = min(itls), min(ttfts) - min(shorts)
    predicted_prefill = long_row["ttft_s"] - short_row["ttft_s"]
    # The targets (decode within 25%, prefill within 35%) hold on a host that runs this test alone; when
    # other jobs saturate the cores the server and the probe are slowed at different moments (measured:
    # ITL 35-67 ms against a 60 ms prediction), so only a looser bound is checked, and said.
    busy = os.getloadavg()[0] > (os.cpu_count() or 1) - 0.25
    tol_decode, tol_prefill = (0.6, 0.8) if busy else (0.25, 0.35)
    if busy:
        warnings.warn(f"host saturated (load {os.getloadavg()[0]:.1f}): checked decode within 60% and prefill "
                      "within 80% instead of 25% / 35%", stacklevel=1)
    # The fastest run is the machine unloaded; a load that comes and goes (the suite's own other
    # processes) spreads the runs, so the prediction is held to the measured spread widened by the
    # tolerance, not to the minimum alone (measured: 21-33 ms across five runs against 27.5 ms).
    lo, hi = itl * (1 - tol_decode), max(itls) * (1 + tol_decode)
    assert lo <= long_row["decode_step_s"] <= hi, (long_row["decode_step_s"], itls)
    # Prefill likewise: the probe runs at one moment and the server at five others, so on a machine whose
    # load comes and goes (measured: two busy loops, the suite and a fit, load above 4 on 2 cores) the
    # probe can land on a slow moment the server's best run missed (2.46 s predicted against 1.13-1.95 s).
    pairs = [t - s for t, s in zip(ttfts, shorts, strict=True)]
    lo, hi = prefill * (1 - tol_prefill), max(pairs) * (1 + tol_prefill)
    assert lo <= predicted_prefill <= hi, (predicted_prefill, ttfts, shorts)
