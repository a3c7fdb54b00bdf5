"""Every reader of a user's file under hostile input, driven through the CLI: exit code 2 and one
line naming the input and the problem, never a traceback, a hang or unbounded memory.

Families: nesting past 64 levels, bytes that are not UTF-8, a YAML alias bomb, /dev/zero (size
bound), a 10,000-character name, a folder and /dev/null where a file is expected; then numbers in
those files that no model, workload, price or budget can hold."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from test_gguf import F32, STRING, U32, build_gguf, tiny_llama
from vazao.cli import app

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

DEEP_JSON = "[" * 100_000 + "]" * 100_000
DEEP_YAML = "a: " + "[" * 100_000 + "]" * 100_000 + "\n"
NOT_UTF8 = b'{"name": "caf\xe9"}\n'
# 9 levels of 9 aliases each: 9^9 ≈ 387 million nodes once expanded (a "billion laughs")
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True))
LONG_NAME = "a" * 10_000

LLAMA_CONFIG = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072,
}
GOOD_BUDGET = "price: gpt-5\ntasks:\n  - name: t\n    ttft_p95: 800ms\n    tokens: {new_input: 100, output: 10}\n"


def one_line_exit_2(args: list[str]) -> str:
    res = runner.invoke(app, args)
    out = res.output
    assert res.exit_code == 2, out
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in out
    assert len(out.strip().splitlines()) == 1, out
    return out


# ---- the readers, each as the CLI command that reads the file --------------------------------------
def _fit(p: str) -> list[str]:
    return ["fit", p, "--gpu", "h100-sxm"]


def _simulate(p: str) -> list[str]:
    return ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", p, "--requests", "5"]


def _via_workload(tmp: Path, body: str) -> list[str]:
    w = tmp / "w.yaml"
    w.write_text(body, encoding="utf-8")
    return _simulate(str(w))


def _index(tmp: Path, p: str) -> list[str]:
    """A checkpoint folder whose safetensors index is the hostile file."""
    folder = tmp / "ckpt"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(LLAMA_CONFIG), encoding="utf-8")
    index = folder / "model.safetensors.index.json"
    index.write_bytes(Path(p).read_bytes())
    return _fit(str(folder))


def _run(tmp: Path, p: str) -> list[str]:
    b = tmp / "budget.yaml"
    b.write_text(GOOD_BUDGET, encoding="utf-8")
    return ["budget", "check", str(b), "--measured", p]


# name -> (file suffix, format, how the CLI reads a path)
READERS: dict[str, tuple[str, str, Callable[[Path, str], list[str]]]] = {
    "config.json": (".json", "json", lambda t, p: _fit(p)),
    "safetensors index": (".json", "json-file-only", _index),
    "gguf": (".gguf", "binary", lambda t, p: _fit(p)),
    "workload": (".yaml", "yaml", lambda t, p: _simulate(p)),
    "trace": (".csv", "csv", lambda t, p: _via_workload(
        t, f"arrival: {{kind: trace, file: {json.dumps(p)}}}\nprompt: 10\noutput: 10\n")),
    "lengths": (".txt", "csv", lambda t, p: _via_workload(
        t, f"arrival: {{kind: poisson, rate: 1}}\nprompt: {{dist: empirical, file: {json.dumps(p)}}}\n"
           "output: 10\nrequests: 5\n")),
    "usage log": (".jsonl", "jsonl", lambda t, p: ["bill", "usage", p, "--price", "gpt-5"]),
    "prices": (".yaml", "yaml", lambda t, p: ["prices", "--prices", p]),
    "litellm prices": (".json", "json", lambda t, p: ["prices", "import", p, "--from-litellm"]),
    "budget": (".yaml", "yaml", lambda t, p: ["budget", "check", p]),
    "run results": (".json", "json", _run),
    "prefix log": (".jsonl", "jsonl", lambda t, p: ["prefix", p, "--price", "sonnet-5.5"]),
}
FILE_ONLY = {"safetensors index"}  # read from inside a folder, never named on the command line


def _content(fmt: str, family: str) -> bytes | None:
    """The hostile bytes of one family for one format; None: the family does not apply."""
    if family == "deep":
        return {"json": DEEP_JSON, "json-file-only": DEEP_JSON, "yaml": DEEP_YAML,
                "jsonl": DEEP_JSON + "\n"}.get(fmt, "").encode() or None
    if family == "not utf-8":
        return b"GGUF\x03\x00\x00\x00\xff\xff" if fmt == "binary" else NOT_UTF8
    if family == "alias bomb":
        return BOMB.encode() if fmt == "yaml" else None
    return None


CASES = [(reader, family) for reader in sorted(READERS) for family in ("deep", "not utf-8", "alias bomb")
         if _content(READERS[reader][1], family) is not None]


@pytest.mark.parametrize(("reader", "family"), CASES)
def test_hostile_content(tmp_path, reader, family):
    suffix, fmt, command = READERS[reader]
    data = _content(fmt, family)
    p = tmp_path / f"hostile{suffix}"
    p.write_bytes(data)
    out = one_line_exit_2(command(tmp_path, str(p)))
    expected = {"deep": "nests deeper than 64", "not utf-8": "UTF-8", "alias bomb": "YAML aliases"}[family]
    if fmt == "binary":
        expected = "GGUF"
    assert expected in out, out


@pytest.mark.parametrize("reader", sorted(set(READERS) - FILE_ONLY))
def test_folder_dev_null_and_long_names(tmp_path, reader):
    suffix, fmt, command = READERS[reader]
    folder = tmp_path / f"folder{suffix}"
    folder.mkdir()
    assert "is a folder" in one_line_exit_2(command(tmp_path, str(folder)))
    long = one_line_exit_2(command(tmp_path, str(tmp_path / (LONG_NAME + suffix))))
    assert len(long) < 400, long  # the name is shortened in the message
    assert "not a regular file" in one_line_exit_2(command(tmp_path, "/dev/null"))


@pytest.mark.parametrize("reader", sorted(set(READERS) - FILE_ONLY))
def test_dev_zero_is_refused(tmp_path, reader):
    suffix, fmt, command = READERS[reader]
    assert "not a regular file" in one_line_exit_2(command(tmp_path, "/dev/zero"))


def test_files_past_the_size_bound_are_refused(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (5 * 2**20))
    assert "larger than 4 MiB" in one_line_exit_2(_simulate(str(big)))
    assert "larger than 4 MiB" in one_line_exit_2(["budget", "check", str(big)])


def test_long_catalog_name_and_folder_without_config(tmp_path):
    out = one_line_exit_2(_fit(LONG_NAME))
    assert "10,000 characters" in out
    out = one_line_exit_2(["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", LONG_NAME])
    assert "10,000 characters" in out
    assert "is a folder with no config.json" in one_line_exit_2(_fit(str(tmp_path)))
    assert "model file /dev/null is not a regular file" in one_line_exit_2(_fit("/dev/null"))


# ---- numbers in config.json ----------------------------------------------------------------------
@pytest.mark.parametrize(("change", "message"), [
    ({"num_attention_heads": 0}, "num_attention_heads must be at least 1, got 0"),
    ({"hidden_size": 10**400}, "hidden_size must be at most 1,048,576"),
    ({"num_hidden_layers": 10**5}, "num_hidden_layers must be at most 10,000"),
    ({"vocab_size": 2**25}, "vocab_size must be at most 16,777,216"),
    ({"num_hidden_layers": -4}, "num_hidden_layers must be at least 1"),
    ({"num_key_value_heads": 64}, "num_kv_heads (64) exceeds num_heads (32)"),
    ({"num_key_value_heads": 5}, "not a multiple of num_kv_heads (5)"),
    ({"num_hidden_layers": True}, "num_hidden_layers"),
    ({"num_local_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": -14336},
     "moe_intermediate_size must be at least 1"),
    ({"num_local_experts": 8, "num_experts_per_tok": 9}, "experts_per_token must be in 1..num_experts"),
])
def test_config_numbers_are_validated(tmp_path, change, message):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**LLAMA_CONFIG, **change}), encoding="utf-8")
    out = one_line_exit_2(_fit(str(p)))
    assert message in out and str(p) in out, out


def test_config_nan_and_huge_floats_are_not_json(tmp_path):
    for text in ('{"hidden_size": NaN}', '{"hidden_size": 1e400}'):
        p = tmp_path / "config.json"
        p.write_text(text, encoding="utf-8")
        assert "not valid JSON" in one_line_exit_2(_fit(str(p)))


def test_safetensors_total_size_is_validated(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_CONFIG), encoding="utf-8")
    (folder / "model.safetensors.index.json").write_text('{"metadata": {"total_size": -5}}', encoding="utf-8")
    assert "total_size must be at least 1" in one_line_exit_2(_fit(str(folder)))


# ---- numbers in a GGUF header --------------------------------------------------------------------
def _gguf(tmp: Path, **kvs) -> str:
    """tiny_llama with some metadata replaced; a value given as (type, value) changes its type too."""
    data, _ = tiny_llama(**{k: v for k, v in kvs.items() if not isinstance(v, tuple)})
    typed = {k: v for k, v in kvs.items() if isinstance(v, tuple)}
    if typed:
        base = [("general.architecture", STRING, "llama"), ("llama.block_count", U32, 2),
                ("llama.embedding_length", U32, 256), ("llama.attention.head_count", U32, 8),
                ("llama.feed_forward_length", U32, 512), ("llama.context_length", U32, 4096)]
        kv = [(k, *typed[k]) if k in typed else (k, t, v) for k, t, v in base]
        data = build_gguf(kv, [("token_embd.weight", (256, 300), "F32")])
    p = tmp / "hostile.gguf"
    p.write_bytes(data)
    return str(p)


@pytest.mark.parametrize(("kvs", "message"), [
    ({"llama.attention.head_count": 0}, "head_count' must be at least 1, got 0"),
    ({"llama.block_count": 0}, "block_count' must be at least 1"),
    ({"llama.attention.head_count_kv": 16}, "num_kv_heads (16) exceeds num_heads (8)"),
    ({"llama.embedding_length": 2**31}, "hidden_size must be at most"),
    ({"llama.block_count": (F32, math.nan)}, "block_count' must be a whole number, got nan"),
    ({"llama.block_count": (F32, math.inf)}, "block_count' must be a whole number, got inf"),
    ({"llama.block_count": (F32, 2.5)}, "must be a whole number, got 2.5"),
])
def test_gguf_numbers_are_validated(tmp_path, kvs, message):
    out = one_line_exit_2(_fit(_gguf(tmp_path, **kvs)))
    assert message in out, out


def test_gguf_header_claims_are_bounded(tmp_path):
    data, _ = tiny_llama()
    p = tmp_path / "claims.gguf"
    p.write_bytes(data[:8] + struct.pack("<QQ", 1, 2**62) + data[24:])  # 2^62 metadata keys
    assert "metadata keys" in one_line_exit_2(_fit(str(p)))
    # a key whose length field says 2^40 bytes
    p.write_bytes(data[:24] + struct.pack("<Q", 2**40) + data[32:])
    assert "corrupt GGUF header" in one_line_exit_2(_fit(str(p)))
    # arrays nested inside arrays, deeper than any real header
    nested = b"".join(struct.pack("<IQ", 9, 1) for _ in range(5000)) + struct.pack("<IQ", 4, 0)
    key = b"k"
    body = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key + struct.pack("<I", 9) + nested
    p.write_bytes(body)
    assert "nested deeper" in one_line_exit_2(_fit(str(p)))


# ---- numbers in a workload -----------------------------------------------------------------------
WL = "arrival: {kind: poisson, rate: 2}\nprompt: 100\noutput: 50\n"


@pytest.mark.parametrize(("body", "message"), [
    (WL + "requests: 1000000000000\n", "requests: Input should be less than or equal to 10000000"),
    (WL + "requests: 100\nseed: -1\n", "seed"),
    ("arrival: {kind: poisson, rate: .nan}\nprompt: 1\noutput: 1\nrequests: 5\n", "non-finite"),
    ("arrival: {kind: poisson, rate: 1.0e+9}\nprompt: 1\noutput: 1\nrequests: 5\n", "rate"),
    ("arrival: {kind: poisson, rate: 1000}\nprompt: 1\noutput: 1\nduration_s: 1.0e+6\n", "sessions, more than"),
    (WL.replace("prompt: 100", "prompt: 100000000") + "requests: 5\n", "prompt"),
    (WL.replace("prompt: 100", "prompt: {dist: lognormal, median: 100, sigma: 50}") + "requests: 5\n", "sigma"),
    (WL.replace("prompt: 100", "prompt: {dist: uniform, low: -5, high: 10}") + "requests: 5\n", "low"),
])
def test_workload_numbers_are_validated(tmp_path, body, message):
    assert message in one_line_exit_2(_via_workload(tmp_path, body))


@pytest.mark.parametrize(("trace", "message"), [
    ("timestamp,prompt_tokens\n0,10\n1,inf\n", "prompt_tokens must be a finite number"),
    ("timestamp\n0\nnan\n", "timestamp must be a finite number"),
    ("0\n-1\n", "timestamp must be at least 0"),
    ("timestamp,prompt_tokens\n0,10\n1,100000000\n", "prompt_tokens must be at most"),
    ("timestamp\n0\n" + "1" * 200_000 + "\n", "not a readable CSV"),
    ("timestamp\n0\x00\n", "is not a timestamp"),
])
def test_trace_numbers_are_validated(tmp_path, trace, message):
    t = tmp_path / "trace.csv"
    t.write_text(trace, encoding="utf-8")
    out = one_line_exit_2(_via_workload(tmp_path, f"arrival: {{kind: trace, file: {t}}}\nprompt: 10\noutput: 10\n"))
    assert message in out, out


def test_cli_overrides_of_a_workload_are_bounded():
    out = one_line_exit_2(["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--requests", "99999999999"])
    assert "requests" in out


# ---- numbers in prices and budgets --------------------------------------------------------------
PRICE = ("prices:\n  - id: mine\n    provider: me\n    usd_per_mtok: {input: 1, output: 2}\n"
         "    source: test\n    as_of: '2026-01'\n")


@pytest.mark.parametrize(("body", "message"), [
    (PRICE.replace("input: 1,", "input: -1,"), "must be a non-negative amount"),
    (PRICE.replace("input: 1,", "input: .inf,"), "not a finite number"),
    (PRICE.replace("input: 1,", "input: 1.0e+30,"), "past any price"),
    (PRICE + "    context_window: -5\n", "context_window of mine must be at least 1"),
    (PRICE + "    aliases: 7\n", "aliases of mine must be a list"),
    (PRICE + "    long_context: 7\n", "long_context must be a list"),
])
def test_price_numbers_are_validated(tmp_path, body, message):
    p = tmp_path / "prices.yaml"
    p.write_text(body, encoding="utf-8")
    assert message in one_line_exit_2(["prices", "--prices", str(p)])


@pytest.mark.parametrize(("body", "message"), [
    (GOOD_BUDGET + "max_error_rate: 2\n", "max_error_rate must be a fraction in [0, 1]"),
    (GOOD_BUDGET.replace("800ms", "1e400s"), "budget.yaml:4: ttft_p95"),
    (GOOD_BUDGET.replace("800ms", "1000000000s"), "must be a positive, finite duration"),
    (GOOD_BUDGET.replace("new_input: 100", "new_input: 1.0e+400"), "tokens.new_input"),
    (GOOD_BUDGET.replace("new_input: 100", "new_input: 10000000000000000"), "tokens.new_input must be at most"),
    (GOOD_BUDGET + "    value_usd: '1e999999'\n", "value_usd"),
    (GOOD_BUDGET + "    calls: 0\n", "calls must be an integer from 1"),
])
def test_budget_numbers_are_validated(tmp_path, body, message):
    p = tmp_path / "budget.yaml"
    p.write_text(body, encoding="utf-8")
    assert message in one_line_exit_2(["budget", "check", str(p)])


@pytest.mark.parametrize(("summary", "message"), [
    ({"requests": 12, "errors": 13, "ttft_s": {}}, "errors (13) exceeds summary.requests (12)"),
    ({"requests": -1, "errors": 0, "ttft_s": {}}, "summary.requests must be at least 0"),
    ({"requests": 1, "errors": 0, "ttft_s": {"p95": "fast"}}, "summary.ttft_s.p95 must be a number"),
    ({"requests": 1, "errors": 0, "ttft_s": [1, 2]}, "summary.ttft_s must be an object"),
    ({"requests": 1.5, "errors": 0, "ttft_s": {}}, "summary.requests must be a whole number"),
])
def test_run_summary_numbers_are_validated(tmp_path, summary, message):
    r = tmp_path / "run.json"
    r.write_text(json.dumps({"summary": summary}), encoding="utf-8")
    assert message in one_line_exit_2(_run(tmp_path, str(r)))


# ---- tensor parallelism and accelerator counts -----------------------------------------------------
@pytest.mark.parametrize(("args", "message"), [
    (["llama-3.1-8b", "--count", "3"], "tp=3 does not divide the 32 attention heads"),
    (["llama-3.1-8b", "--count", "6", "--tp", "6"], "tp=6 does not divide"),
    (["phi-3-medium", "--count", "4"], "tp=4 does not fit the 10 KV heads"),
    (["llama-3.1-8b", "--count", "99999999999999999999999"], "at most"),
    (["llama-3.1-8b", "--count", "200000", "--tp", "8"], "at most 100,000"),
])
def test_tp_must_split_the_heads_and_counts_are_bounded(args, message):
    out = one_line_exit_2(["fit", *args, "--gpu", "h100-sxm"])
    assert message in out, out


def test_tp_may_replicate_kv_heads():
    # vLLM replicates KV heads when tp is a multiple of them: 8 KV heads on 16 ranks
    res = runner.invoke(app, ["fit", "llama-3.1-8b", "--gpu", "h100-sxm", "--count", "16", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tp"] == 16
    # phi-3-medium: 40 heads, 10 KV heads: tp=2 splits both
    assert runner.invoke(app, ["fit", "phi-3-medium", "--gpu", "h100-sxm", "--count", "2"]).exit_code == 0


@pytest.mark.parametrize(("args", "kind"), [
    (["fit", "llama-3.1-8b", "--gpu", LONG_NAME], "GPU"),
    (["fit", "llama-3.1-8b", "--gpu", "h100-sxm", "--format", LONG_NAME], "format"),
    (["fit", "llama-3.1-8b", "--gpu", "h100-sxm", "--kv", LONG_NAME], "KV-cache format"),
    (["bill", "request", "--price", LONG_NAME, "--input", "5"], "price"),
])
def test_long_catalog_labels_are_not_echoed(args, kind):
    out = one_line_exit_2(args)
    assert f"unknown {kind} 'aaaa" in out and "(10,000 characters)" in out and len(out) < 200, out
