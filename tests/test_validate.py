"""vazao validate / calibrate: the CSV reader, metric semantics, bad input, profile files, bands.

Expected figures cite the row of shared/data/published-measurements.csv they come from."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from vazao.analytic import offline_point, trtllm_bench_limits
from vazao.bands import band
from vazao.catalog.models import get_model
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.physics.profiles import load_profiles
from vazao.validate import parse_rows, predict_rows, validation_report
from vazao.validate.predict import predict
from vazao.validate.rows import engine_family, parse_condition, parse_version

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "published-measurements.csv"
HEADER = ("id,source,engine,engine_version,model,params_b,precision_weights,precision_kv_or_compute,gpu,"
          "gpu_count,tp,pp,input_len,output_len,concurrency_or_batch,metric,value,notes\n")
# trt017-0006 of the shared file: TensorRT-LLM 0.17, Llama-3.1-8B FP8 on one H200, 128/2048, max load
ROW_TRT = ('trt017-0006,perf-overview,trtllm,0.17,Llama-3.1-8B,8.03,FP8,FP8,H200-SXM-141GB,1,1,1,128,2048,'
           'max(offline),output_tok_s_total,25398.86,"notes"\n')
# lcpp-xj-0001: llama.cpp, Llama-3-8B Q4_K_M on an RTX 3070, tg 512 at batch 1: 72.79 tok/s
ROW_LCPP = ('lcpp-xj-0001,xj,llama.cpp,May 2024,Llama-3-8B,8.03,Q4_K_M,F16 KV (llama.cpp default),RTX-3070,1,1,1,'
            '0,512,1,tg_tok_s_batch1,72.79,"batch 1"\n')
# trt014-0004: TensorRT-LLM 0.14 online serving, Llama-3.1-70B BF16 on 4× H100, 467/256 at 2 req/s: ITL 21 ms
ROW_RATE = ('trt014-0004,perf-overview,trtllm,0.14.0 (Triton tensorrtllm_backend),Llama-3.1-70B,70.6,BF16,BF16,'
            'H100-SXM-80GB,4,4,1,467,256,request_rate=2/s,itl_ms,21,"Mean inter-token latency"\n')


def test_row_fields_and_conditions():
    rows, problems = parse_rows(HEADER + ROW_TRT + ROW_LCPP + ROW_RATE)
    assert problems == [] and len(rows) == 3
    trt, lcpp, rate = rows
    assert trt.family == "trtllm" and trt.version == (0, 17) and trt.condition.kind == "max"
    assert lcpp.family == "llama.cpp" and lcpp.version is None and lcpp.condition.kind == "batch"
    assert rate.version == (0, 14, 0) and rate.condition.kind == "rate" and rate.condition.value == 2.0
    assert engine_family("nim(trtllm)") == engine_family("mlperf-submitter(trtllm)") == "trtllm"
    assert parse_version("v1.0 (doc)") == (1, 0)
    assert math.isinf(parse_condition("request_rate=INF/s").value)


@pytest.mark.parametrize("line, reason", [
    ("x1,s,trtllm,0.17,Llama-3.1-8B,8,FP8,FP8,H200-SXM-141GB,1,1,1,128,128,max(offline),output_tok_s_total,-5,n\n",
     "value must be a positive number"),
    ("x2,s,trtllm,0.17,Llama-3.1-8B,8,FP8,FP8,H200-SXM-141GB,1,1,1,128,128,max(offline),output_tok_s_total,abc,n\n",
     "is not a number"),
    ("x3,s,trtllm,0.17,Llama-3.1-8B,8,FP8,FP8,H200-SXM-141GB,1,1,1,128,128,max(offline),bogus_metric,5,n\n",
     "unknown metric"),
    ("x4,s,deepspeed,0.17,Llama-3.1-8B,8,FP8,FP8,H200-SXM-141GB,1,1,1,128,128,max(offline),ttft_ms,5,n\n",
     "unknown engine"),
    ("x5,s,trtllm,0.17,Llama-3.1-8B,8,FP8,FP8,H200-SXM-141GB,1,1,1,128,128,whenever,ttft_ms,5,n\n",
     "unknown concurrency_or_batch"),
    ("x6,s,trtllm,0.17\n", "malformed CSV"),
    ("x7,s,trtllm,0.17,Llama-3.1-8B,8,FP8,FP8,H200-SXM-141GB,3,2,1,128,128,max(offline),ttft_ms,5,n\n",
     "not a multiple of tp"),
])
def test_bad_lines_are_reported_with_their_line_number(line, reason):
    rows, problems = parse_rows(HEADER + ROW_TRT + line)
    assert len(rows) == 1 and len(problems) == 1
    assert problems[0].line == 3 and reason in problems[0].reason


def test_unknown_model_or_gpu_is_skipped_with_a_reason_not_a_crash():
    bad = ROW_TRT.replace("Llama-3.1-8B", "NoSuchModel-9B").replace("trt017-0006", "b1")
    bad += ROW_TRT.replace("H200-SXM-141GB", "Voodoo-5").replace("trt017-0006", "b2")
    rows, _ = parse_rows(HEADER + bad)
    res = predict_rows(rows, workers=1)
    assert [r.skipped is not None for r in res] == [True, True]
    assert "unknown model" in res[0].skipped and "unknown GPU" in res[1].skipped
    rep = validation_report(res)
    assert rep.coverage == 0 and rep.predicted == 0


def test_missing_columns_refuse_the_file():
    with pytest.raises(VazaoError, match="missing column"):
        parse_rows("id,engine\nx,trtllm\n")


def test_fp8_checkpoint_gets_fp8_kv_on_trtllm():
    # perf-overview notes (every 0.17 FP8 row): "FP8 quantization also sets KV cache to FP8"
    rows, _ = parse_rows(HEADER + ROW_TRT.replace(",FP8,FP8,", ",FP8,not stated,"))
    assert predict(rows[0]).kv == "fp8"


def test_trtllm_bench_sizing_follows_its_tuning_rules():
    # tensorrt_llm/bench/build/tuning.py finetune_setting: 880 requests → 896 (a multiple of 128), tokens
    # 880 × (1 + 128/2048) = 935 → at least 2048; 100 requests at 2048/128 → 128 (×32), 1,700 tokens → 2048;
    # the 4096 batch cap is shared by the pp stages
    assert trtllm_bench_limits(880, 128, 2048, 1) == (896, 2048)
    assert trtllm_bench_limits(100, 2048, 128, 1) == (128, 2048)
    assert trtllm_bench_limits(100, 128, 128, 1)[0] == 128
    assert trtllm_bench_limits(1e6, 128, 128, 2) == (2048, 4096)


def test_offline_batch_never_exceeds_what_the_kv_cache_holds():
    dep = make_deployment(get_model("llama-3.1-70b"), "h100-sxm", "fp8", "fp8", engine="trtllm")
    p = offline_point(dep, 128, 2048)
    from vazao.physics.memory import fit

    assert 1 <= p.batch <= fit(dep, 128 + 2048).kv_capacity_tokens // (128 + 2048)


def test_simulated_rows_share_one_simulation_and_give_a_latency():
    rows, _ = parse_rows(HEADER + ROW_RATE + ROW_RATE.replace("itl_ms,21", "ttft_ms,62").replace("0004", "0003"))
    res = predict_rows(rows, workers=1)
    assert all(r.predicted and r.regime == "serving" for r in res)
    assert res[0].detail == res[1].detail  # one simulation, two metrics


def test_profile_file_with_unknown_key_or_efficiency_above_one_is_refused(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("engines:\n  trtllm:\n    memory_efficency: 0.5\n")
    with pytest.raises(VazaoError, match="unknown key 'memory_efficency'"):
        load_profiles(bad)
    bad.write_text("engines:\n  trtllm:\n    memory_efficiency: 1.3\n")
    with pytest.raises(VazaoError, match="memory_efficiency must be"):
        load_profiles(bad)
    r = subprocess.run([sys.executable, "-m", "vazao", "validate", str(SHARED), "--profile", str(bad)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "memory_efficiency" in r.stderr


def test_band_from_residual_quantiles_and_widened_off_the_fit(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(
        "engines:\n  trtllm:\n    calibration:\n      residuals:\n"
        "        memory: {n: 40, q10: -0.1, q50: 0.0, q90: 0.2}\n        all: {n: 50, q10: -0.3, q50: 0, q90: 0.3}\n"
        "      fitted_on: {generations: [hopper], formats: [fp8], model_families: [llama]}\n")
    prof = load_profiles(f)["trtllm"]
    lo, hi, note = band(prof, "memory", 100.0, generation="hopper", weight_format="fp8", model_family="llama")
    assert lo == pytest.approx(100 * math.exp(-0.1)) and hi == pytest.approx(100 * math.exp(0.2)) and note == ""
    lo2, hi2, note2 = band(prof, "memory", 100.0, generation="blackwell", weight_format="fp8", model_family="llama")
    assert lo2 < lo and hi2 > hi and "generation" in note2
    lo3, hi3, _ = band(prof, "compute", 100.0)  # too few rows of that regime: the pooled residuals
    assert lo3 == pytest.approx(100 * math.exp(-0.3))


def test_a_release_the_base_fit_saw_keeps_its_band_and_one_it_never_saw_widens(tmp_path):
    # bench/serving_fit.py --release base: the base values are fitted on the releases without their own entry
    # (here 1.1) and name them; 1.0 has its own entry; 1.4 was in no fit at all
    f = tmp_path / "p.yaml"
    f.write_text(
        "engines:\n  trtllm:\n    calibration:\n      releases: ['1.1']\n      residuals:\n"
        "        all: {n: 50, q10: -0.2, q50: 0, q90: 0.2}\n"
        "      versions:\n        '1.0':\n          residuals:\n"
        "            all: {n: 50, q10: -0.1, q50: 0, q90: 0.1}\n")
    prof = load_profiles(f)["trtllm"]
    assert band(prof, "memory", 100.0, version=(1, 0)).high == pytest.approx(100 * math.exp(0.1))
    seen = band(prof, "memory", 100.0, version=(1, 1, 0))
    assert seen.high == pytest.approx(100 * math.exp(0.2)) and seen.note == ""
    unseen = band(prof, "memory", 100.0, version=(1, 4))
    assert unseen.high > seen.high and "engine release" in unseen.note
    assert band(prof, "memory", 100.0).note == ""  # no release stated: the base, as at_version resolves it


def test_a_throughput_the_base_fit_had_no_rows_of_takes_a_release_s_residuals_widened(tmp_path):
    # the base fitted on serving latencies alone, asked a compute-bound max-load throughput: TTFT residuals
    # (flipped) would stand for it; the 1.0 entry's fit had compute-bound throughputs, so those, widened
    f = tmp_path / "p.yaml"
    f.write_text(
        "engines:\n  trtllm:\n    calibration:\n      residuals:\n"
        "        serving ttft: {n: 50, q10: -0.9, q50: 0, q90: 0.6}\n"
        "        serving latency: {n: 50, q10: -0.3, q50: 0, q90: 0.25}\n"
        "        all: {n: 100, q10: -0.7, q50: 0, q90: 0.4}\n"
        "      versions:\n        '1.0':\n          residuals:\n"
        "            compute: {n: 27, q10: -0.25, q50: -0.1, q90: 0.02}\n"
        "            all: {n: 90, q10: -0.4, q50: 0, q90: 0.4}\n")
    prof = load_profiles(f)["trtllm"]
    c = band(prof, "compute", 100.0)
    mid, k = (-0.25 + 0.02) / 2, 1 + 0.5  # one thing unseen: the release
    assert c.low == pytest.approx(100 * math.exp(mid + (-0.25 - mid) * k))
    assert c.high == pytest.approx(100 * math.exp(mid + (0.02 - mid) * k)) and "engine release" in c.note
    m = band(prof, "memory", 100.0)  # a decode speed: the base's own per-token latencies, flipped
    assert m.low == pytest.approx(100 * math.exp(-0.25)) and m.high == pytest.approx(100 * math.exp(0.3))
    assert m.note == ""
    t = band(prof, "serving ttft", 100.0)
    assert t.high == pytest.approx(100 * math.exp(0.6)) and t.note == ""


@pytest.mark.skipif(not SHARED.exists(), reason="shared/data is not beside this checkout")
def test_validate_json_over_a_slice_of_the_shared_file(tmp_path):
    lines = SHARED.read_text().splitlines(keepends=True)
    sample = tmp_path / "rows.csv"
    sample.write_text("".join(lines[:1] + lines[1:40] + lines[-20:]))
    r = subprocess.run([sys.executable, "-m", "vazao", "validate", str(sample), "--json", "--workers", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    s = doc["summary"]
    assert s["rows"] == 59 and 0 < s["coverage"] <= 1
    for row in doc["rows"]:
        assert ("skipped" in row) or {"id", "metric", "measured", "predicted", "ape", "regime", "band"} <= set(row)


def test_the_first_guess_profiles_pin_every_calibrated_value():
    # bench/holdout_bench.py starts every held-out fit from this file: a value it leaves out would be read from
    # the shipped calibration, fitted on the held-out rows too
    import yaml

    from vazao.physics.profiles import CALIBRATED

    doc = yaml.safe_load((Path(__file__).parent.parent / "bench" / "first_guess_profiles.yaml").read_text())
    for name, entry in doc["engines"].items():
        assert not [k for k in CALIBRATED if k not in entry], name
