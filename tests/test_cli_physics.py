"""CLI: fit / estimate / formats / catalogs, JSON shapes other tools rely on, and bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from vazao.cli import app

runner = CliRunner()


def run_json(*args: str) -> dict:
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_fit_json_keys_seed004():
    d = run_json("fit", "llama-3.1-70b", "--gpu", "h100-sxm", "--count", "8", "--format", "bf16",
                 "--context", "8192", "--ideal")
    for key in ("weights_bytes", "kv_bytes_per_token", "kv_bytes_per_sequence", "fits",
                "max_concurrent_sequences", "free_bytes_for_kv"):
        assert key in d
    assert d["kv_bytes_per_token"] == 327_680  # seed 004
    assert d["fits"] is True
    # seed 004's "8 × 80 GB" node holds ≈ 185 of them counting 80e9 bytes a GPU; an H100's 80 is GiB
    # (85.9e9 bytes, nvidia-smi 81559 MiB: NVIDIA/nccl issue #1264), so (8 × 85.9 − 141.1) GB / 2.68 GB = 203
    assert d["max_concurrent_sequences"] == 203


def test_estimate_json_keys():
    d = run_json("estimate", "llama-3.1-8b", "--gpu", "rtx-3060", "--format", "int4-awq",
                 "--batch", "1,8,32", "--input", "1024", "--output", "256")
    assert [r["batch"] for r in d["rows"]] == [1, 8, 32]
    for r in d["rows"]:
        for key in ("batch", "decode_step_s", "tokens_per_s_per_request", "tokens_per_s_total",
                    "prefill_s", "ttft_s", "bound"):
            assert key in r
    assert "crossover_batch" in d


def test_formats_json_status():
    d = run_json("formats", "--gpu", "rtx-3060")
    status = {f["name"]: f["status"] for f in d["formats"]}
    assert status["bf16"] == "native" and status["fp8"] == "emulated" and status["nvfp4"] == "unsupported"
    assert all(f["status"] in ("native", "emulated", "unsupported") for f in d["formats"])


@pytest.mark.parametrize("cmd", [["models"], ["gpus"], ["formats"]])
def test_catalog_tables_and_json(cmd):
    res = runner.invoke(app, cmd)
    assert res.exit_code == 0, res.output
    d = run_json(*cmd)
    assert len(next(iter(d.values()))) >= 17


def test_local_config_json(tmp_path):
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
           "max_position_embeddings": 131072, "tie_word_embeddings": False}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    d = run_json("estimate", str(p), "--gpu", "a100-sxm-80gb", "--ideal", "--batch", "1")
    assert d["rows"][0]["bound"] == "memory"
    # 8.03B parameters at 16 bits over 2,039 GB/s: the ideal step is the weight read (+ a little KV).
    assert 6e-3 < d["rows"][0]["decode_step_s"] < 9e-3


@pytest.mark.parametrize("args,needle", [
    (["fit", "llama-3.1-70b", "--gpu", "h1000"], "closest"),
    (["fit", "llama-9-70b", "--gpu", "h100"], "closest"),
    (["fit", "llama-3.1-70b", "--gpu", "h100", "--format", "fp7"], "closest"),
    (["fit", "llama-3.1-70b", "--gpu", "h100", "--context", "0"], "context"),
    (["fit", "llama-3.1-70b", "--gpu", "h100", "--count", "-1"], "count"),
    (["estimate", "llama-3.1-8b", "--gpu", "h100", "--batch", "0,8"], "batch"),
    (["estimate", "llama-3.1-8b", "--gpu", "h100", "--input", "0"], "input"),
    (["estimate", "llama-3.1-8b", "--gpu", "v100", "--format", "nvfp4"], "NVFP4"),
])
def test_bad_input_exit_2_one_line(args, needle):
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert needle.lower() in res.output.lower()


def test_incomplete_config_names_the_field(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32}))
    res = runner.invoke(app, ["fit", str(p), "--gpu", "h100"])
    assert res.exit_code == 2
    assert "num_hidden_layers" in res.output and "Traceback" not in res.output


def test_not_a_gguf_and_truncated_gguf(tmp_path, gemma_gguf):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"PK\x03\x04 not a gguf at all" * 10)
    res = runner.invoke(app, ["estimate", str(bad), "--gpu", "rtx-4090"])
    assert res.exit_code == 2 and "gguf" in res.output.lower()
    cut = tmp_path / "cut.gguf"
    with open(gemma_gguf, "rb") as fh:
        cut.write_bytes(fh.read(4096))
    res = runner.invoke(app, ["estimate", str(cut), "--gpu", "rtx-4090"])
    assert res.exit_code == 2 and "truncated" in res.output.lower()


def test_gguf_estimate_uses_its_format_and_llama_cpp(gemma_gguf):
    d = run_json("estimate", str(gemma_gguf), "--gpu", "rtx-4090", "--batch", "1")
    assert d["format"] == "q4_k_m" and d["engine"] == "llama.cpp"
    # The GGUF's own tensor bytes (≈ 247 MB), not a bits-per-weight estimate.
    assert 0.2e9 < d["fit"]["weights_bytes"] < 0.26e9
