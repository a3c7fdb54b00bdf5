"""`vazao bench` against a real llama.cpp server (llama-cpp-python's OpenAI-compatible server with
the Gemma 3 270M Q4_K_M GGUF), checked against what the server itself reports.

The server logs its own per-request accounting (llama.cpp's `llama_perf_context_print`): prompt
tokens evaluated (after its prefix cache), decode runs, and the total time of the request. Its
streams carry no usage (one token per chunk), so vazao counts output tokens per chunk and sizes
prompts with the server's /extras/tokenize: both are checked against the server's own numbers.

Bounded: 1 warm-up + 5 measured requests of 32 output tokens, one at a time (the server has one
slot); about 30 s on 2 cores."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from vazao.cli import app

pytestmark = pytest.mark.llama_server

OUT, PROMPT, N = 32, 64, 6
PERF = re.compile(
    r"(?:Llama\.generate: (?P<hit>\d+) prefix-match hit, remaining (?P<rem>\d+) prompt tokens to eval\s*\n)?"
    r"(?:.*\n)*?.*prompt eval time =\s*(?P<pms>[\d.]+) ms /\s*(?P<ptok>\d+) tokens.*\n"
    r".*eval time =\s*(?P<ems>[\d.]+) ms /\s*(?P<runs>\d+) runs.*\n"
    r".*total time =\s*(?P<tms>[\d.]+) ms /\s*(?P<ttok>\d+) tokens")


def server_requests(log: str) -> list[dict]:
    """Per generation: prompt tokens (prefix hit + evaluated), decode runs, times in seconds."""
    out = []
    for m in PERF.finditer(log):
        hit = int(m["hit"]) if m["hit"] else 0
        evaluated = int(m["rem"]) if m["rem"] else int(m["ptok"])
        out.append({"prompt_tokens": hit + evaluated, "evaluated": evaluated, "runs": int(m["runs"]),
                    "eval_s": float(m["ems"]) / 1e3, "total_s": float(m["tms"]) / 1e3})
    return out


def test_bench_against_llama_cpp(llama_server, tmp_path):
    wl = tmp_path / "real.yaml"
    wl.write_text(f"name: real\narrival: {{kind: concurrency, concurrency: 1}}\nprompt: {PROMPT}\n"
                  f"output: {OUT}\nrequests: {N}\nwarmup: 1\nseed: 11\n")
    before = len(server_requests(llama_server.log_text()))
    r = CliRunner().invoke(app, [
        "bench", llama_server.url, "-w", str(wl), "--api", "completions", "--json", "--no-progress",
        "--records", str(tmp_path / "real.jsonl"), "-o", str(tmp_path / "real.json"),
        # min_tokens: the model may not end early, so every answer is the 32 tokens asked for
        "--extra-body", json.dumps({"min_tokens": OUT, "temperature": 0.0}), "--timeout", "120s"])
    died = llama_server.death()
    assert died is None, died  # a crash of the server reads as its exit status and log, not a reset
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    s = data["summary"]
    assert s["requests"] == N - 1 and s["errors"] == 0 and data["run"]["warmup_requests"] == 1
    assert data["tokens"]["output"] == {"chunks": N - 1}  # no usage in llama-cpp-python's streams
    assert "/extras/tokenize" in data["calibration"]["source"]
    assert data["server"]["engine"] == "llama-cpp-python"

    logged = server_requests(llama_server.log_text())[before:]
    # the probe (4 tokens), then the warm-up and the measured requests, one at a time
    assert len(logged) == N + 1, logged
    served = logged[2:]
    records = [json.loads(line) for line in (tmp_path / "real.jsonl").read_text().splitlines()]
    records = sorted((d for d in records if d["kind"] == "record"), key=lambda d: d["arrival_s"])
    print("\nserver vs client, per request:")
    for rec, srv in zip(records, served, strict=True):
        out = rec["output_tokens"]
        ttft = rec["first_token_s"] - rec["arrival_s"]
        e2e = rec["end_s"] - rec["arrival_s"]
        tpot = (e2e - ttft) / (out - 1)
        server_tpot = srv["eval_s"] / srv["runs"]
        print(f"  out {out} (server runs {srv['runs']}), prompt {rec['prompt_tokens']} (server "
              f"{srv['prompt_tokens']}), e2e {e2e * 1e3:.0f} ms (server total {srv['total_s'] * 1e3:.0f}), "
              f"ttft {ttft * 1e3:.0f} ms, tpot {tpot * 1e3:.1f} ms (server eval/run {server_tpot * 1e3:.1f})")
        # token counts: the server decodes one run per token after the first (which the prompt's
        # evaluation yields); one token per chunk on the client
        assert out == OUT and srv["runs"] in (out - 1, out)
        # prompt sizes from the server's tokenizer, within a few tokens of what it evaluated
        assert abs(rec["prompt_tokens"] - srv["prompt_tokens"]) <= max(3, 0.06 * srv["prompt_tokens"])
        # time: the client sees the whole of the server's request, plus HTTP and streaming
        assert srv["total_s"] * 0.97 <= e2e <= srv["total_s"] * 1.3 + 0.1
        # decode time per token: llama.cpp's eval time covers the model only; the client's TPOT
        # adds the server's Python per token (sampling, detokenizing, SSE)
        assert server_tpot * 0.95 <= tpot <= server_tpot * 1.5 + 0.005
    # the summary is those records
    assert s["output_tokens"] == OUT * (N - 1)
    total_server = sum(x["total_s"] for x in served)
    assert s["output_tokens_per_s"] <= OUT * (N - 1) / total_server * 1.05
