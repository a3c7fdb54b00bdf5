"""vazao validate on messy rows: each reading a row does not state outright is taken and named on the row
(MeasuredRow.assumed, `assumed` in --json, a count in the summary); --strict refuses those rows instead; and
no CSV, however mixed its optional and free-text cells, ends in a traceback.

Rows quoted from shared/data/published-serving.csv and published-measurements.csv cite their id; dataset
lengths cite src/vazao/catalog/data/datasets.yaml, which cites where each figure comes from."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vazao.catalog.models import get_model
from vazao.errors import NotFoundError
from vazao.physics.profiles import get_engine
from vazao.validate import parse_rows, predict_rows, validation_report
from vazao.validate.predict import kv_format_name, predict, row_deployment
from vazao.validate.run import _config_key

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SERVING = SHARED / "published-serving.csv"
MEASUREMENTS = SHARED / "published-measurements.csv"
FIELDS = ["id", "source", "engine", "engine_version", "model", "params_b", "precision_weights",
          "precision_kv_or_compute", "gpu", "gpu_count", "tp", "pp", "input_len", "output_len", "concurrency_or_batch",
          "metric", "value", "notes"]
HEADER = ",".join(FIELDS) + "\n"

# aic-00001 of published-serving.csv: SGLang 0.5.9, DeepSeek-V3 FP8 on 8x H200, 1024/1024 at concurrency 4
AIC_00001 = ('aic-00001,aiconfigurator silicon_sample.csv row dsr1_h200_sglang_fp8_agg_1024x1024_c4_cfg81,sglang,0.5.9,'
             'DeepSeek-V3,671,FP8,gemm=fp8 moe=fp8_block,H200-SXM-141GB,8,8,1,1024,1024,concurrency=4,ttft_ms,'
             '259.9114292766899,aggregated serving at fixed concurrency 4; moe_tp=8 moe_ep=1 attention_dp=1; mean '
             'over the run as dumped by aiconfigurator\n')
# trt017-0006 of published-measurements.csv: TensorRT-LLM 0.17, Llama-3.1-8B FP8 on one H200, 128/2048, max load
TRT017_0006 = ('trt017-0006,perf-overview,trtllm,0.17,Llama-3.1-8B,8.03,FP8,FP8,H200-SXM-141GB,1,1,1,128,2048,'
               'max(offline),output_tok_s_total,25398.86,"notes"\n')


def row_of(line: str, **cells: str) -> str:
    """The CSV line with some cells replaced."""
    d = dict(zip(FIELDS, next(csv.reader([line])), strict=True))
    d.update(cells)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow([d[f] for f in FIELDS])
    return out.getvalue()


def one(line: str, strict: bool = False):
    rows, problems = parse_rows(HEADER + line, strict=strict)
    assert len(rows) + len(problems) == 1
    return rows[0] if rows else problems[0]


def said(row, *words: str) -> str:
    """The one assumption on the row that mentions every word."""
    hits = [n for n in row.assumed if all(w.lower() in n.lower() for w in words)]
    assert len(hits) == 1, row.assumed
    return hits[0]


# ---- model names: the catalog's resolution, for every command -------------------------------------------
@pytest.mark.parametrize("name, arch", [
    ("DeepSeek-R1", "deepseek-v3"),  # published-serving.csv: 152 rows; R1 is V3's architecture (same config.json)
    ("deepseek-ai/DeepSeek-R1-0528", "deepseek-v3"),
    ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b"),
    ("Qwen3-235B-A22B-2507", "qwen3-235b-a22b"),  # a dated re-release without a tag
    ("Llama-3.1-8B-Instruct-20240723", "llama-3.1-8b"),
    ("google/gemma-2-9b-it", "gemma-2-9b"),
    ("Llama-2-70b-chat-hf", "llama-2-70b"),
])
def test_names_people_use_resolve_to_the_architecture(name, arch):
    assert get_model(name).name == arch


@pytest.mark.parametrize("name", ["DeepSeek-R1-Distill-Llama-8B", "llama-3.1-7b", "Qwen3-236B-A22B-2507"])
def test_unknown_names_stay_an_error_with_the_closest_matches(name):
    # R1-Distill-Llama-8B is a Llama, not DeepSeek-V3: a date or tag strip must not make it one
    with pytest.raises(NotFoundError) as info:
        get_model(name)
    assert info.value.suggestions and "closest" in str(info.value)


# ---- the serving file's conventions ---------------------------------------------------------------------
def test_gemm_moe_precision_takes_the_engines_default_kv_and_says_so():
    row = one(AIC_00001)
    assert row.kv == "gemm=fp8 moe=fp8_block" and row.weights == "FP8"
    said(row, "KV dtype not stated", "gemm=fp8 moe=fp8_block")
    eng = get_engine("sglang").at_version(row.version)
    assert kv_format_name(row, eng, "fp8") == eng.kv_format_for("fp8")
    assert row_deployment(row).kv_format.name == eng.kv_format_for("fp8")


def test_parallel_layout_is_kept_on_the_row_and_applied():
    row = one(AIC_00001)
    assert (row.moe_tp, row.moe_ep, row.attention_dp) == (8, 1, 1)
    assert not any("expert" in n for n in row.assumed)  # a stated layout is read, not assumed
    dep = row_deployment(row)
    assert dep.tp == 8 and dep.expert_parallel == 1 and not dep.attention_dp
    ep = one(row_of(AIC_00001, notes="aggregated serving; moe_tp=1 moe_ep=8 attention_dp=1"))
    assert (ep.moe_tp, ep.moe_ep, ep.attention_dp) == (1, 8, 1) and ep.assumed == row.assumed
    dep = row_deployment(ep)
    assert dep.tp == 8 and dep.pp == 1 and dep.expert_parallel == 8 and not dep.attention_dp
    dp = one(row_of(AIC_00001, notes="moe_tp=2 moe_ep=4 attention_dp=8"))
    assert dp.attention_dp == 8
    dep = row_deployment(dp)
    assert dep.attention_dp and dep.expert_parallel == 4


def test_an_nvfp4_row_trtllm_cannot_run_on_hopper_reads_gpt_oss_own_mxfp4_checkpoint():
    # formats.yaml: TensorRT-LLM "runs MXFP4, not NVFP4, on Hopper"; checkpoints.yaml: openai/gpt-oss-120b is mxfp4
    line = row_of(AIC_00001, engine="trtllm", engine_version="1.0.0rc3", model="gpt-oss-120b",
                  precision_weights="NVFP4", precision_kv_or_compute="gemm=nvfp4 moe=nvfp4",
                  notes="moe_tp=1 moe_ep=1 attention_dp=1")
    row = one(line)
    assert row.weights == "mxfp4"
    said(row, "NVFP4", "MXFP4")
    vllm = one(row_of(line, engine="vllm", engine_version="0.12.0"))
    assert vllm.weights == "NVFP4"  # vLLM runs NVFP4 weight-only on Hopper (Marlin): nothing to re-read
    dense = one(row_of(line, model="Llama-3.1-70B"))
    assert dense.weights == "NVFP4"  # no MXFP4 checkpoint of that model: left for the predictor to refuse


# ---- messy cells --------------------------------------------------------------------------------------
def test_approximate_numbers_are_read_and_noted():
    row = one(row_of(TRT017_0006, value="~25,400", input_len="~128", gpu_count="about 1"))
    assert row.value == 25400 and row.input_len == 128 and row.gpu_count == 1
    said(row, "value", "~25,400", "approximate")
    said(row, "input_len", "approximate")
    exact = one(row_of(TRT017_0006, value="25,398.86"))  # a thousands separator is not an approximation
    assert exact.value == pytest.approx(25398.86) and exact.assumed == ()


def test_an_uncertain_precision_is_read_and_noted():
    row = one(row_of(TRT017_0006, precision_weights="FP8?", precision_kv_or_compute="FP8 (?)"))
    assert row.weights == "FP8" and row.kv == "FP8"
    said(row, "precision_weights", "uncertain")
    assert predict(row).kv == "fp8"


def test_a_gpu_whose_form_factor_is_not_stated_is_predicted_as_the_sxm_variant():
    # published-gpus.csv, "H100-80GB (form factor not stated)": SXM 3350 GB/s, PCIe 2000 GB/s (ml-engineering)
    line = TRT017_0006.replace("H200-SXM-141GB", "H100-80GB (form factor not stated)")
    row = one(line)
    note = said(row, "form factor not stated", "SXM")
    assert "H100 SXM" in note
    acc = row_deployment(row).accelerator
    assert acc.memory_bandwidth_bytes_per_s == pytest.approx(3350e9, rel=0.02)
    assert one(line, strict=True).reason.startswith("strict:")


def test_an_empty_tp_comes_from_the_notes_or_the_gpu_count():
    four = ('trt014-0004,perf-overview,trtllm,0.14.0,Llama-3.1-70B,70.6,BF16,BF16,H100-SXM-80GB,4,4,1,467,256,'
            'request_rate=2/s,itl_ms,21,"Mean inter-token latency"\n')  # trt014-0004 of published-measurements.csv
    from_notes = one(row_of(four, tp="", notes="TP=4, Triton backend"))
    assert from_notes.tp == 4 and from_notes.pp == 1
    said(from_notes, "tp not stated", "notes")
    from_count = one(row_of(four, tp="", notes="Mean inter-token latency"))
    assert from_count.tp == 4
    said(from_count, "gpu_count / pp")
    moe_only = one(row_of(AIC_00001, tp=""))  # 'moe_tp=8' in the notes is not the attention tp
    assert moe_only.tp == 8 and any("gpu_count / pp" in n for n in moe_only.assumed)
    assert one(row_of(four, tp="", gpu_count="")).reason.startswith("gpu_count and tp are both empty")


def test_output_tok_s_is_read_as_the_total_and_says_so():
    row = one(row_of(TRT017_0006, metric="output_tok_s"))
    assert row.metric == "output_tok_s_total"
    said(row, "output_tok_s", "total")
    total = one(TRT017_0006)
    assert predict(row).value == pytest.approx(predict(total).value)


def test_mlperf_scenarios():
    offline = one(row_of(TRT017_0006, concurrency_or_batch="Offline"))
    assert offline.condition.kind == "max" and offline.assumed == ()
    server = one(row_of(TRT017_0006, concurrency_or_batch="server(target_qps=12.5)"))
    assert server.condition.kind == "rate" and server.condition.value == 12.5
    said(server, "MLPerf server", "Poisson", "12.5")
    assert "target QPS" in one(row_of(TRT017_0006, concurrency_or_batch="server")).reason


# ---- dataset-defined lengths (catalog/data/datasets.yaml) ---------------------------------------------
def test_sharegpt_lengths_are_the_datasets_published_means():
    row = one(row_of(TRT017_0006, input_len="ShareGPT (variable)", output_len="ShareGPT (variable)"))
    # Kwon et al. 2023 (vLLM, arXiv:2309.06180) Fig. 11: ShareGPT input mean 161.31, output mean 337.99 tokens
    assert (row.input_len, row.output_len) == (161, 338)
    assert "Kwon et al. 2023" in said(row, "input_len", "ShareGPT")


def test_mlperf_dataset_variable_is_the_benchmarks_dataset():
    mlperf = ('mlperf-1,MLPerf Inference v4.1 closed,mlperf-submitter(trtllm),,Llama-2-70B,70,FP8,FP8,H100-SXM-80GB,8,'
              '8,1,dataset (variable),dataset (variable),offline,output_tok_s_total,24525,"MLPerf llama2-70b-99"\n')
    row = one(mlperf)
    # OpenOrca: 222.33 input tokens (mean of tok_input_length, 24,576 prompts), 294.45 output tokens per sample
    # (mlcommons/inference language/llama2-70b/README.md)
    assert (row.input_len, row.output_len) == (222, 294)
    said(row, "output_len", "OpenOrca", "294.45")
    gptj = one(row_of(mlperf, model="GPT-J-6B", notes="MLPerf gpt-j-99, CNN/DailyMail"))
    # CNN/DailyMail: 870.73 input tokens (cnn_eval.json); output ~153 tokens, but GPT-J's benchmark caps generation
    # at max_new_tokens 128 (mlcommons/inference language/gpt-j/backend_PyTorch.py)
    assert (gptj.input_len, gptj.output_len) == (871, 128)
    said(gptj, "output_len", "capped at 128")
    unnamed = one(row_of(mlperf, source="my lab", engine="trtllm", notes=""))
    assert "no dataset is named" in unnamed.reason


# ---- --strict, the JSON and the summary ---------------------------------------------------------------
MESSY = (AIC_00001 + row_of(TRT017_0006, id="m2", value="~25,400")
         + row_of(TRT017_0006, id="m3", precision_weights="FP8?") + TRT017_0006)


def test_strict_refuses_every_row_that_needs_an_assumption():
    rows, problems = parse_rows(HEADER + MESSY, strict=True)
    assert [r.id for r in rows] == ["trt017-0006"]
    assert len(problems) == 3 and all(p.reason.startswith("strict: ") for p in problems)
    assert "KV dtype not stated" in problems[0].reason
    lenient, none = parse_rows(HEADER + MESSY)
    assert none == [] and [bool(r.assumed) for r in lenient] == [True, True, True, False]


def test_assumptions_in_the_json_and_the_summary():
    rows, problems = parse_rows(HEADER + MESSY)
    rep = validation_report(predict_rows(rows[1:], workers=1), problems)
    doc = rep.to_json()
    by_id = {r["id"]: r for r in doc["rows"]}
    assert by_id["trt017-0006"]["assumed"] == [] and "approximate" in by_id["m2"]["assumed"][0]
    assert doc["summary"]["assumed"]["rows"] == 2 == rep.assumed_rows
    assert {n["rows"] for n in doc["summary"]["assumed"]["notes"]} == {1}


def test_cli_strict_and_the_summary_line(tmp_path):
    f = tmp_path / "messy.csv"
    f.write_text(HEADER + "".join(MESSY.splitlines(keepends=True)[1:]))  # the three fast rows
    run = [sys.executable, "-m", "vazao", "validate", str(f), "--workers", "1"]
    lenient = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert lenient.returncode == 0, lenient.stderr
    assert "3 of 3 rows predicted" in lenient.stdout and "2 of 3 rows read with assumptions" in lenient.stdout
    strict = subprocess.run([*run, "--strict", "--json"], capture_output=True, text=True, timeout=300)
    assert strict.returncode == 0, strict.stderr
    s = json.loads(strict.stdout)["summary"]
    assert s["predicted"] == 1 and s["rows"] == 3 and s["assumed"]["rows"] == 0


# ---- the shared files -------------------------------------------------------------------------------
@pytest.mark.skipif(not SERVING.exists(), reason="shared/data is not beside this checkout")
def test_every_serving_row_is_read_and_a_sample_of_each_kind_predicted():
    rows, problems = parse_rows(SERVING.read_text())
    assert problems == [] and len(rows) == 2692  # shared/data/README.md: 2,692 rows
    assert all(r.model != "DeepSeek-R1" or get_model(r.model).name == "deepseek-v3" for r in rows)
    assert all(any("KV dtype not stated" in n for n in r.assumed) for r in rows)
    sample, seen = [], set()
    for r in rows:  # one row per model × engine × format, at its lowest concurrency
        key = (get_model(r.model).name, r.family, r.weights)
        if key not in seen and r.condition.value <= 4 and r.metric == "tpot_ms":
            seen.add(key)
            sample.append(r)
    assert len(sample) >= 8
    res = predict_rows(sample, workers=1, sim_requests=16)
    # every row predicted: aic-01966 (Qwen3-235B-A22B FP8, 235 GB of weights) says gpu_count 1 on an H200 of
    # 141 GB, and is read with the layout its notes name (moe_tp=2)
    assert not [r.row.id for r in res if r.skipped]
    # a TPOT within a factor of 3 of the measured one (the physics is issue 21's to tune; reading is this test's).
    # aic-01966 is the one miss past it today: vLLM 0.12's MoE on tp2 measured 43.8 ms against 8.6 ms predicted
    far = [(r.row.id, r.predicted, r.row.value) for r in res if not 1 / 3 < r.predicted / r.row.value < 3]
    assert [f[0] for f in far] in ([], ["aic-01966"]), far


@pytest.mark.skipif(not MEASUREMENTS.exists(), reason="shared/data is not beside this checkout")
def test_the_measurements_file_needs_no_assumption_but_its_source_s_attention_dp():
    rows, problems = parse_rows(MEASUREMENTS.read_text())
    assert problems == [] and len(rows) == 1269
    # the perf overview's v1.0 MoE rows on several GPUs ran with enable_attention_dp and its dataset sizes (the
    # doc's recipe, not the row): every other row states all it needs
    said = [r for r in rows if r.assumed]
    assert said and all(r.family == "trtllm" and r.attention_dp == r.tp > 1 and r.requests for r in said)
    assert all(len(r.assumed) == 2 for r in said)


# ---- never a traceback --------------------------------------------------------------------------------
_NUM = st.one_of(st.sampled_from(["", "0", "-3", "1", "2", "8", "128", "1e3", "nan", "inf", "~500", "about 64",
                                  "1,024", "12.5", "≈2", "x", "🙂", "99999999999"]),
                 st.integers(-5, 5000).map(str))
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)
_CELLS = {
    "id": st.one_of(st.just(""), _TEXT),
    "source": st.one_of(_TEXT, st.sampled_from(["MLPerf Inference v4.1", "ShareGPT bench"])),
    "engine": st.one_of(st.sampled_from(["trtllm", "vllm", "sglang", "llama.cpp", "nim(trtllm)", "TGI",
                                         "mlperf-submitter(trtllm)", ""]), _TEXT),
    "engine_version": st.one_of(st.sampled_from(["", "0.17", "1.0 (doc)", "May 2024", "gpt-oss-dev", "v0.5.9",
                                                 "1.0.0rc3"]), _TEXT),
    "model": st.one_of(st.sampled_from(["Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", "DeepSeek-R1",
                                        "Qwen3-30B-A3B", "gpt-oss-20b", "NoSuch-9B", "", "Llama-2-70B"]), _TEXT),
    "params_b": st.one_of(_NUM, _TEXT),
    "precision_weights": st.sampled_from(["FP8", "BF16", "NVFP4", "FP8?", "Q4_K_M", "", "int4-awq", "MXFP4",
                                          "weird"]),
    "precision_kv_or_compute": st.sampled_from(["FP8", "not stated", "", "gemm=fp8 moe=fp8", "gemm=native moe=native",
                                                "gemm=?? moe=", "F16 KV (llama.cpp default)", "FP8?", "junk"]),
    "gpu": st.sampled_from(["H100-SXM-80GB", "H200-SXM-141GB", "H100-80GB (form factor not stated)", "RTX-4090",
                            "A100-80GB (form factor not stated)", "Voodoo-5", "", "L40S"]),
    "gpu_count": _NUM, "tp": _NUM, "pp": _NUM,
    "input_len": st.one_of(_NUM, st.sampled_from(["ShareGPT (variable)", "dataset (variable)", "variable"])),
    "output_len": st.one_of(_NUM, st.sampled_from(["ShareGPT (variable)", "dataset (variable)", "OpenOrca"])),
    "concurrency_or_batch": st.sampled_from(["max(offline)", "offline", "1", "4", "concurrency=2", "request_rate=2/s",
                                             "request_rate=INF/s", "server(target_qps=3)", "server", "~8",
                                             "batch=0", "whenever", ""]),
    "metric": st.sampled_from(["output_tok_s_total", "output_tok_s", "output_tok_s_per_gpu", "total_tok_s",
                               "tg_tok_s_batch1", "pp_tok_s", "ttft_ms", "tpot_ms", "itl_ms", "e2e_latency_ms",
                               "bogus"]),
    "value": _NUM,
    "notes": st.one_of(_TEXT, st.sampled_from(["median", "TP=2; moe_tp=1 moe_ep=8 attention_dp=2",
                                               "moe_tp=99999999 moe_ep=0", "pipeline parallel", "CNN/DailyMail"])),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries(_CELLS), min_size=1, max_size=4), st.booleans())
def test_any_mix_of_cells_gives_a_result_never_an_exception(cells, strict):
    out = io.StringIO()
    w = csv.writer(out)  # "\r\n" line ends: a cell holding "\r" or "\n" is quoted
    w.writerow(FIELDS)
    for d in cells:
        w.writerow([d[f] for f in FIELDS])
    rows, problems = parse_rows(out.getvalue(), strict=strict)
    assert len(rows) + len(problems) == len(cells)
    sorted(rows, key=_config_key)  # a file mixing parseable and free-text engine_version cells sorts
    # kept small: the simulator's work is not what this test is about
    small = [r for r in rows if r.input_len <= 20_000 and r.output_len <= 20_000 and r.condition.value <= 64]
    rep = validation_report(predict_rows(small, workers=1, sim_requests=8), problems)
    doc = json.loads(json.dumps(rep.to_json(), default=str))
    assert doc["summary"]["rows"] == len(small) + len(problems)
    for r in rep.results:
        assert r.skipped is not None or (r.predicted is not None and math.isfinite(r.predicted))


@pytest.mark.skipif(not SERVING.exists(), reason="shared/data is not beside this checkout")
def test_a_layout_the_notes_contradict_is_read_as_the_notes_name():
    # published-serving.csv's Qwen3-235B-A22B FP8 rows on H200 with vLLM 0.12.0 that say gpu_count 1 and tp 1
    # while their notes say moe_tp=2 (236 GB of FP8 weights cannot sit on one 141 GB card)
    import csv

    from vazao.validate.rows import read_rows

    rows, problems = read_rows(SERVING)
    with open(SERVING, encoding="utf-8") as fh:
        raw = {r["id"]: r for r in csv.DictReader(fh)}
    odd = [r for r in rows if raw[r.id]["gpu_count"] == "1" and r.moe_tp and r.moe_tp > 1]
    assert odd and all(r.tp == r.moe_tp == r.gpu_count for r in odd)
    assert all(any("cannot be the layout the notes name" in a for a in r.assumed) for r in odd)
    # tp 1 with the experts split moe_tp ways is data parallelism (vLLM's --data-parallel-size without expert
    # parallelism): each GPU runs attention whole for its own requests. Measured, these rows' TPOT sits with the
    # tp 2 rows' at moe_tp=2 (52-59 ms) and above the tp 4 rows' at moe_tp=4 (41-44 ms against 34-38 ms)
    assert all(r.attention_dp == r.moe_tp for r in odd)
    assert all(any("attention data-parallel" in a for a in r.assumed) for r in odd)
    # tp 2 under moe_tp=4 is not: attention runs 2-way there, and the rows are read as tp 4 as before
    wider = [r for r in rows if raw[r.id]["tp"] == "2" and r.moe_tp == 4 and raw[r.id]["gpu_count"] == "2"]
    assert wider and all(r.tp == 4 and (r.attention_dp or 1) == 1 for r in wider)
    # the file's moe_ep=0 (no expert parallelism) reads as moe_ep=1; experts split whole (moe_ep=2) is not this layout
    line = row_of(AIC_00001, model="Qwen3-235B-A22B", gpu_count="1", tp="1", notes="moe_tp=2 moe_ep=0 attention_dp=1")
    assert (one(line).tp, one(line).attention_dp) == (2, 2)
    line = row_of(AIC_00001, model="Qwen3-235B-A22B", gpu_count="1", tp="1", notes="moe_tp=2 moe_ep=2 attention_dp=1")
    assert (one(line).tp, one(line).attention_dp) == (2, 1)


# aic-04398 of published-serving.csv (aiconfigurator row 2026_04_06_deepseek_r1_h200_sxm_trtllm_fp8_agg_1024x1024_c4
# _tp8_ep8_954): gpu_count 64, tp 64, notes moe_tp=8 moe_ep=8, TPOT 8.583777779094092 ms, the same figure as
# aic-02486 (row ..._c4_tp8_0_ep8_0_1252: gpu_count 8, tp 8, moe_tp=1 moe_ep=8)
AIC_04398 = ('aic-04398,aiconfigurator silicon_sample.csv row 2026_04_06_deepseek_r1_h200_sxm_trtllm_fp8_agg_1024x1024'
             '_c4_tp8_ep8_954,trtllm,1.1.0rc2.post2,DeepSeek-R1,671,FP8,gemm=fp8 moe=fp8,H200-SXM-141GB,64,64,1,1024,'
             '1024,concurrency=4,tpot_ms,8.583777779094092,aggregated serving at fixed concurrency 4; moe_tp=8 '
             'moe_ep=8 attention_dp=1; mean over the run as dumped by aiconfigurator\n')


def test_a_layout_multiplied_past_one_node_is_read_as_the_node_it_ran_on():
    r = one(AIC_04398)
    assert (r.gpu_count, r.tp, r.moe_tp, r.moe_ep) == (8, 8, 1, 8)
    assert any("multiplying tp by ep" in a for a in r.assumed)
    assert "strict: the row needs a reading" in str(one(AIC_04398, strict=True))  # --strict refuses it
    # within one node the same product is a real layout (tp 8 = moe_tp 2 × moe_ep 4) and is kept
    kept = one(row_of(AIC_04398, gpu_count="8", tp="8", notes="moe_tp=2 moe_ep=4 attention_dp=1"))
    assert (kept.gpu_count, kept.tp, kept.moe_tp, kept.moe_ep) == (8, 8, 2, 4)
    assert not any("multiplying" in a for a in kept.assumed)
    # a product that is not the row's tp is not this slip either
    other = one(row_of(AIC_04398, gpu_count="16", tp="16", notes="moe_tp=2 moe_ep=4 attention_dp=1"))
    assert (other.gpu_count, other.tp) == (16, 16)
    # predicted on 8 GPUs: one node, not the 36 ms of a 64-GPU tp group all-reducing over the network
    assert predict(r).value < 20


@pytest.mark.skipif(not SERVING.exists(), reason="shared/data is not beside this checkout")
def test_every_multiplied_layout_in_the_serving_file_is_read_back_to_one_node():
    from vazao.validate.rows import read_rows

    rows, _ = read_rows(SERVING)
    multiplied = [r for r in rows if any("multiplying tp by ep" in a for a in r.assumed)]
    # 98 rows: DeepSeek-V3/R1 at tp 64 (moe_tp=8 moe_ep=8) and Qwen3-235B at tp 16 (moe_tp=4 moe_ep=4)
    assert len(multiplied) == 98
    assert all(r.gpu_count <= 8 and r.tp == r.gpu_count and r.moe_tp == 1 for r in multiplied)


def test_an_aiconfigurator_row_runs_with_the_step_budget_its_generator_sets():
    # aiconfigurator's generator: max_num_tokens = batch + isl + 1500 (cli/backends/trtllm.py of its first commit
    # efcae124c, rule_plugin/trtllm.rule), rounded up to TensorRT-LLM's 32-token blocks: 4 + 1024 + 1500 = 2528
    r = one(AIC_04398)
    assert (r.step_tokens, r.step_tokens_cap) == (2528, False)
    assert "max_num_tokens = batch (the concurrency) + input + 1500, rounded up to 32" in said(r, "step budget")
    # vLLM: --max-num-batched-tokens = batch + isl + 1500 (rule_plugin/vllm.rule), no rounding: 16 + 1024 + 1500
    v = one(row_of(AIC_04398, engine="vllm", engine_version="", concurrency_or_batch="concurrency=16"))
    assert (v.step_tokens, v.step_tokens_cap) == (2540, False)
    # SGLang: --max-prefill-tokens = isl + 1500 (rule_plugin/sglang.rule), a cap on a step's prompt tokens
    s = one(row_of(AIC_04398, engine="sglang", engine_version="0.5.9"))
    assert (s.step_tokens, s.step_tokens_cap) == (2524, True)
    # a budget the notes state is read as stated, with nothing assumed about it; another source's row keeps the
    # profile's budget
    stated = one(row_of(AIC_04398, notes="moe_tp=1 moe_ep=8 attention_dp=1; max_num_batched_tokens=8192"))
    assert (stated.step_tokens, stated.step_tokens_cap) == (8192, False)
    assert not any("step budget" in a for a in stated.assumed)
    other = one(row_of(AIC_04398, source="a vendor's blog", gpu_count="8", tp="8"))
    assert other.step_tokens is None and not any("step budget" in a for a in other.assumed)
    bad = one(row_of(AIC_04398, notes="max_num_tokens=0"))
    assert "max_num_tokens 0 out of range" in bad.reason


def _vllm_llama_8b(clients: int, notes: str) -> str:
    """aic-04398's line made a vLLM Llama-3.1-8B BF16 closed loop on one H100 (a vendor's blog): its TTFT."""
    return row_of(AIC_04398, engine="vllm", engine_version="", model="Llama-3.1-8B", params_b="8",
                  precision_weights="BF16", precision_kv_or_compute="bf16", gpu="H100-SXM-80GB", gpu_count="1",
                  tp="1", source="a vendor's blog", concurrency_or_batch=f"concurrency={clients}", metric="ttft_ms",
                  notes=notes)


def test_the_step_budget_reaches_the_simulation():
    # the same closed loop of 8 prompts of 1,024 tokens: a budget of one prompt per step gets the first prompt
    # its first token sooner than the 8,192 tokens of the profile, where all eight are prefilled in one step
    line = _vllm_llama_8b(8, "aggregated serving at fixed concurrency 8")
    default = predict(one(line)).value
    small = predict(one(row_of(line, notes="max_num_batched_tokens=1032"))).value
    assert small < 0.8 * default


# aic-02145 of published-serving.csv: SGLang 0.5.9, DeepSeek-R1 FP8 on 8x H200, 1024/1024 at concurrency 64,
# its source naming the measurement date (measured=2026-03-25T16:34:14Z)
AIC_02145 = ('aic-02145,"ai-dynamo/aiconfigurator silicon_sample.csv row '
             '2026_03_25_deepseek_r1_h200_sxm_sglang_fp8_agg_1024x1024_c64_tp8_0_ep1_0_256 '
             '(source_file=2026-03-25.csv; model=DeepSeek-R1; silicon_concurrency=64; '
             'measured=2026-03-25T16:34:14Z; wip=False; image=lmsysorg/sglang:v0.5.9-cu130)",'
             'sglang,0.5.9,DeepSeek-R1,671,FP8,gemm=fp8 moe=fp8_block,H200-SXM-141GB,8,8,1,1024,1024,'
             'concurrency=64,ttft_ms,418.6534033193311,aggregated serving at fixed concurrency 64; moe_tp=8 '
             'moe_ep=1 attention_dp=1; mean over the run as dumped by aiconfigurator\n')


def test_an_sglang_row_measured_after_the_generator_turned_on_mixed_chunks_runs_with_them():
    # aiconfigurator's generator passes --enable-mixed-chunk to an aggregated SGLang worker since 2026-01-19
    # (07a377923, rule_plugin/sglang.rule); the row was measured on 2026-03-25
    r = one(AIC_02145)
    assert r.mixed_chunks
    assert "--enable-mixed-chunk (since 2026-01-19" in said(r, "mixed chunks")
    assert "strict: the row needs a reading" in str(one(AIC_02145, strict=True))
    # measured before that date, or its date not given: SGLang's default, nothing assumed about it
    for source in (AIC_02145.split(",")[1].replace("2026-03-25T", "2026-01-18T"),
                   "ai-dynamo/aiconfigurator silicon_sample.csv row x (source_file=y.csv)"):
        early = one(row_of(AIC_02145, source=source.strip('"')))
        assert not early.mixed_chunks and not any("mixed chunks" in a for a in early.assumed)
    # another engine's row of the same date: no such flag
    assert not one(row_of(AIC_02145, engine="trtllm", engine_version="1.1.0")).mixed_chunks
    # stated in the notes, either way, read as stated
    on = one(row_of(AIC_02145, source="a vendor's blog", notes="moe_tp=8 moe_ep=1; --enable-mixed-chunk"))
    assert on.mixed_chunks and not any("mixed chunks" in a for a in on.assumed)
    off = one(row_of(AIC_02145, notes="moe_tp=8 moe_ep=1; enable_mixed_chunk=false"))
    assert not off.mixed_chunks


def test_mixed_chunks_reach_the_simulation():
    # 64 clients of 1,024-token prompts, every one arriving at once in the first round: prefill first, the
    # prompts already prefilled wait for the rest before their next token; mixed, they decode alongside, finish
    # apart and come back apart, so the rounds after the first queue less for their first token
    first = one(row_of(AIC_02145, notes="moe_tp=8 moe_ep=1; enable_mixed_chunk=false"))
    mixed = one(AIC_02145)
    assert predict(mixed).value < 0.8 * predict(first).value


# aic-01589 of published-serving.csv: TensorRT-LLM 1.3.0rc1, gpt-oss-120b on 4x H100, 4000/1000, TTFT 1591.0 ms.
# Its source names the run `…_agg_4000x1000_c192_tp4_epnone_1` and silicon_concurrency=192; the row says
# concurrency=48 (192 ÷ tp)
AIC_01589 = ('aic-01589,ai-dynamo/aiconfigurator silicon_sample.csv row openai_gpt_oss_120b_openai_gpt_oss_120b_h100'
             '_sxm_trtllm_agg_4000x1000_c192_tp4_epnone_1 (gtl_job_id=23879486; silicon_concurrency=192; measured='
             '2026-03-18),trtllm,1.3.0rc1,gpt-oss-120b,120,FP8,gemm=fp8 moe=fp8,H100-SXM-80GB,4,4,1,4000,1000,'
             'concurrency=48,ttft_ms,1591.0,aggregated serving at fixed concurrency 48; moe_tp=4 moe_ep=1 '
             'attention_dp=1; mean over the run as dumped by aiconfigurator\n')


def test_a_run_s_own_client_count_is_read_where_the_row_s_concurrency_differs():
    r = one(AIC_01589)
    assert (r.condition.kind, r.condition.value) == ("concurrency", 192)
    assert "read as the run's clients" in said(r, "differs from the run's silicon_concurrency")
    assert r.step_tokens == 5696  # the generator's budget for 192 clients: 192 + 4000 + 1500, rounded up to 32
    # where they agree (2,666 rows of the serving file), nothing is assumed
    same = one(row_of(AIC_01589, concurrency_or_batch="concurrency=192"))
    assert same.condition.value == 192 and not [n for n in same.assumed if "silicon_concurrency" in n]
    # a row of no aiconfigurator run keeps its own concurrency
    other = one(row_of(AIC_01589, source="a blog post (silicon_concurrency=192)"))
    assert other.condition.value == 48
    # out of range: one line, no traceback
    bad = one(row_of(AIC_01589, source=AIC_01589.split(",")[1].replace("=192", "=0")))
    assert "silicon_concurrency must be a positive number" in bad.reason


# aic-02046 of published-serving.csv: vLLM 0.12.0, Llama-3.1-8B-Instruct FP8 on one H200, 4000/1000 at 128 clients,
# TPOT 21.99 ms; its source names the checkpoint (NVIDIA's Model Optimizer FP8 export)
AIC_02046 = ('aic-02046,ai-dynamo/aiconfigurator silicon_sample.csv row nvidia_llama_3_1_8b_instruct_fp8_'
             'nvidia_llama_3_1_8b_instruct_fp8_h200_sxm_vllm_agg_4000x1000_c128_tp1_epnone_10 (source_file=/Users/'
             'harrli/projects/aic-auto-gap-analysis/data/h200_sxm/vllm/0.12.0/nvidia_Llama-3.1-8B-Instruct-FP8.csv; '
             'silicon_concurrency=128),vllm,0.12.0,Llama-3.1-8B-Instruct,8.03,FP8,gemm=fp8 moe=fp8,H200-SXM-141GB,'
             '1,1,1,4000,1000,concurrency=128,tpot_ms,21.99,aggregated serving at fixed concurrency 128; moe_tp=1 '
             'moe_ep=1 attention_dp=1; mean over the run as dumped by aiconfigurator\n')


def test_a_named_modelopt_fp8_checkpoint_brings_its_fp8_kv_cache():
    r = one(AIC_02046)
    assert r.kv == "fp8"
    assert "'nvidia_llama_3_1_8b_instruct_fp8'" in said(r, "KV dtype not stated", "Model Optimizer")
    assert not [a for a in r.assumed if "engine's default for the checkpoint" in a]  # one reading, not two
    assert "strict: the row needs a reading" in str(one(AIC_02046, strict=True))
    # the reading reaches the prediction: vLLM's default (a 16-bit cache) reads twice the KV bytes each step
    # (128 sequences of ~4,500 tokens: 75 GB at 16 bits on one H200, 4.8 TB/s), so its TPOT is slower
    default = one(row_of(AIC_02046, source="a blog post"))
    assert default.kv == "gemm=fp8 moe=fp8" and "engine's default" in said(default, "KV dtype not stated")
    assert predict(r).kv == "fp8" and predict(default).kv == "fp16"
    assert predict(r).value < 0.8 * predict(default).value
    # the checkpoint named as the model, with no KV cell: the same reading
    named = one(row_of(AIC_02046, source="", model="nvidia/Llama-3.1-8B-Instruct-FP8", precision_kv_or_compute=""))
    assert named.kv == "fp8"
    # a KV dtype the row states wins; an FP8 checkpoint of another publisher, or an NVIDIA one that is not FP8
    # weights, brings none
    assert one(row_of(AIC_02046, precision_kv_or_compute="bf16")).kv == "bf16"
    assert one(row_of(AIC_02046, source="RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8")).kv == "gemm=fp8 moe=fp8"
    assert one(row_of(AIC_02046, precision_weights="BF16")).kv == "gemm=fp8 moe=fp8"


def test_a_closed_loop_s_stated_request_count_is_what_is_simulated():
    # aiperf's generated benchmark sends --request-count = concurrency × rounds, every client starting at once
    # (aiconfigurator generator/config/backend_templates/benchmark/bench_run.sh.j2): the first round is one burst,
    # so the more rounds the run counts, the less that burst weighs in its mean TTFT. A row stating its count is
    # simulated with it (at least one round, at most MAX_STATED_ROUNDS); one that does not, with
    # CLOSED_LOOP_ROUNDS rounds.
    from vazao.limits import MAX_STATED_RATE_REQUESTS, MAX_STATED_ROUNDS
    from vazao.validate.predict import CLOSED_LOOP_ROUNDS, sim_request_count

    base = row_of(AIC_02145, notes="moe_tp=8 moe_ep=1; enable_mixed_chunk=true")
    assert sim_request_count(one(base)) == CLOSED_LOOP_ROUNDS * 64
    assert sim_request_count(one(row_of(base, notes=base.split(",")[-1].strip() + "; num_requests=1280"))) == 1280
    assert sim_request_count(one(row_of(base, notes="moe_tp=8 moe_ep=1; num_requests=10"))) == 64
    assert sim_request_count(one(row_of(base, notes="num_requests=999999999"))) == MAX_STATED_ROUNDS * 64
    # the burst of the first round weighs 1/2 of two rounds' mean and 1/40 of forty's: vLLM's rounds after the
    # first drift apart (decodes first, prompts filling the step's budget), so forty rounds wait less on average
    line = _vllm_llama_8b(32, "aggregated serving at fixed concurrency 32; num_requests=64")
    two = predict(one(line)).value
    forty = predict(one(row_of(line, notes="aggregated serving at fixed concurrency 32; num_requests=1280"))).value
    assert forty < 0.8 * two
    # an offered rate's stated count too
    rate = one(row_of(line, concurrency_or_batch="rate=4", notes="num_requests=300"))
    assert sim_request_count(rate, 500) == 300 and sim_request_count(one(row_of(line, concurrency_or_batch="rate=4",
                                                                                   notes="")), 500) == 500
    huge = one(row_of(line, concurrency_or_batch="rate=4", notes="num_requests=999999999"))
    assert sim_request_count(huge, 500) == MAX_STATED_RATE_REQUESTS
