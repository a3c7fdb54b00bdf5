"""Published (or the user's own) measurements as rows: the CSV schema of
shared/data/published-measurements.csv, read through vazao.inputs, each line checked on its own.

A row that cannot be read (missing column, a value that is not a positive number, a condition
vazao does not know) becomes a Problem with its line number; the file as a whole is refused only
when it is not a CSV of that schema at all.

Real rows are messy. A row is read the way a careful person would read it, and every reading that the
row does not state outright is named on it (MeasuredRow.assumed): an approximate figure ('~500'), an
uncertain precision ('FP8?'), a GPU whose form factor is not stated (the SXM variant), an empty tp or
pp (from the notes, or gpu_count / pp), lengths a dataset defines ('ShareGPT (variable)': the dataset's
published mean, catalog/data/datasets.yaml), MLPerf's server scenario (Poisson arrivals at the target
QPS), 'output_tok_s' (read as the total over all GPUs), the serving file's 'gemm=X moe=Y' (the KV dtype
is not stated: the engine's default), its expert/attention data parallel layout (approximated as
tensor parallel) and the step budget its runs were launched with (aiconfigurator's generator: batch + input +
1,500 tokens). strict=True refuses every such row instead, with the reading it would have needed."""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from vazao import inputs, limits
from vazao.errors import NotFoundError, VazaoError

COLUMNS = ("id", "engine", "model", "precision_weights", "gpu", "gpu_count", "tp", "pp", "input_len",
           "output_len", "concurrency_or_batch", "metric", "value")
OPTIONAL = ("source", "engine_version", "params_b", "precision_kv_or_compute", "notes")
METRICS = {
    # metric: (what it measures, unit in the file)
    "output_tok_s_total": "output tokens/s over all GPUs",
    "output_tok_s_per_gpu": "output tokens/s per GPU",
    "total_tok_s": "input + output tokens/s",
    "tg_tok_s_batch1": "single-stream decode tokens/s",
    "pp_tok_s": "prompt-processing tokens/s",
    "ttft_ms": "time to first token (ms)",
    "tpot_ms": "time per output token (ms)",
    "itl_ms": "inter-token latency (ms)",
    "e2e_latency_ms": "end-to-end latency (ms)",
}

# engine column → engine family of engines.yaml; a wrapper "nim(trtllm)" is its inner engine
_FAMILIES = {"trtllm": "trtllm", "tensorrt-llm": "trtllm", "trt-llm": "trtllm", "vllm": "vllm",
             "sglang": "sglang", "llama.cpp": "llama.cpp", "llamacpp": "llama.cpp", "ollama": "llama.cpp",
             "lmdeploy": None, "tgi": None}


@dataclass(frozen=True)
class Condition:
    """How the load was offered: 'max' (all requests queued at once), 'batch' (a static batch of
    `value` sequences), 'concurrency' (closed loop of `value` users) or 'rate' (`value` requests/s)."""

    kind: str
    value: float

    def describe(self) -> str:
        users = f"{self.value:g} user" + ("s" if self.value != 1 else "")
        return {"max": "max load", "batch": f"batch {self.value:g}", "concurrency": users,
                "rate": "all at once" if math.isinf(self.value) else f"{self.value:g} req/s"}[self.kind]


@dataclass(frozen=True)
class MeasuredRow:
    id: str
    line: int
    engine: str  # as written
    family: str  # engines.yaml profile name
    version: tuple[int, ...] | None
    model: str
    weights: str
    kv: str  # as written ('not stated' when the file says so)
    gpu: str
    gpu_count: int
    tp: int
    pp: int
    input_len: int
    output_len: int
    condition: Condition
    metric: str
    value: float
    median: bool  # the notes say the figure is a median, not a mean
    source: str
    assumed: tuple[str, ...] = ()  # each reading the row did not state outright, in words
    # the parallel layout the notes name (the serving file's moe_tp=A moe_ep=B attention_dp=C), kept for the
    # predictor; the deployment is still built from tp and pp
    moe_tp: int | None = None
    moe_ep: int | None = None
    attention_dp: int | None = None
    # the engine's per-step token budget the deployment ran with, where the row states it or its source's
    # deployment generator sets it (None: the profile's); step_tokens_cap: it caps a step's new prompt tokens
    # below the engine's own chunk (SGLang's --max-prefill-tokens) rather than replacing the budget
    step_tokens: int | None = None
    step_tokens_cap: bool = False
    # prompts prefilled in the same step as the running decodes (SGLang --enable-mixed-chunk), where the row
    # states it or its source's generator passed it; False: the profile's scheduling
    mixed_chunks: bool = False
    # requests the run queued (a max-load run's engines share them), where the notes state it (num_requests=N)
    # or its source's recipe sets it; None: enough to fill every engine
    requests: int | None = None
    # every request of the run had these lengths (a published row's ISL/OSL); False where they are a run's
    # means over varied requests (a `vazao bench` level), which bounds less (validate/predict.in_step_floor_ms)
    uniform_lengths: bool = True


@dataclass(frozen=True)
class Problem:
    line: int
    id: str
    reason: str


def engine_family(name: str) -> str | None:
    """'mlperf-submitter(trtllm)' and 'nim(trtllm)' → 'trtllm'; unknown engines → None."""
    key = name.strip().lower()
    inner = re.search(r"\(([^()]+)\)\s*$", key)
    if inner:
        key = inner.group(1).strip()
    return _FAMILIES.get(key.replace(" ", ""))


def parse_version(text: str) -> tuple[int, ...] | None:
    """'0.14.0 (Triton tensorrtllm_backend)' → (0, 14, 0); 'v1.0' → (1, 0); no leading number → None."""
    m = re.match(r"\s*v?(\d+(?:\.\d+){0,3})\b", text or "")
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def parse_condition(text: str) -> Condition:
    return _condition(text)[0]


def _condition(text: str) -> tuple[Condition, str | None]:
    """The load the row was measured under, and the reading taken where the row names it loosely."""
    t = text.strip().lower().replace(" ", "")
    note = None
    if "~" in t or "≈" in t:
        note = f"concurrency_or_batch {text.strip()[:40]!r} is approximate: read without the '~'"
        t = t.replace("~", "").replace("≈", "")
    if t in ("max(offline)", "max", "offline", "max-load") or re.fullmatch(r"(mlperf)?offline(\(.*\))?", t):
        return Condition("max", 0.0), note
    if re.fullmatch(r"(request_rate|rate)=(inf|infinite)(/s)?", t):
        return Condition("rate", math.inf), note  # every request sent at once, then served by the engine
    m = re.fullmatch(r"(request_rate|rate)=([0-9.e+]+)(/s)?", t)
    if m:
        return Condition("rate", _positive(m.group(2), "request rate", 1e6)), note
    # MLPerf's server scenario: loadgen issues queries with Poisson arrivals at the target QPS
    m = re.fullmatch(r"(mlperf)?server\W*(target_?)?qps\W*([0-9.e+]+)\W*", t)
    if m:
        qps = _positive(m.group(3), "target QPS", 1e6)
        return Condition("rate", qps), (f"MLPerf server scenario at target QPS {qps:g}: Poisson arrivals at "
                                         f"{qps:g} req/s")
    if re.fullmatch(r"(mlperf)?server(\(\))?", t):
        raise VazaoError(f"concurrency_or_batch {text[:40]!r}: an MLPerf server scenario needs its target QPS "
                         "(server(target_qps=X))")
    m = re.fullmatch(r"(concurrency|users)=([0-9]+)", t)
    if m:
        return Condition("concurrency", _positive(m.group(2), "concurrency", 1e6, integer=True)), note
    m = re.fullmatch(r"(batch=)?([0-9]+)", t)
    if m:
        return Condition("batch", _positive(m.group(2), "batch", 1e6, integer=True)), note
    raise VazaoError(f"unknown concurrency_or_batch {text[:40]!r} (max(offline), request_rate=X/s, "
                     "concurrency=N, a batch size, or MLPerf's offline / server(target_qps=X))")


def _positive(text: str, what: str, maximum: float, integer: bool = False) -> float:
    try:
        v = float(text)
    except ValueError:
        raise VazaoError(f"{what} {text[:40]!r} is not a number") from None
    if not math.isfinite(v) or v <= 0:
        raise VazaoError(f"{what} must be a positive number, got {text[:40]!r}")
    if v > maximum:
        raise VazaoError(f"{what} must be at most {maximum:g}, got {text[:40]!r}")
    if integer and v != int(v):
        raise VazaoError(f"{what} must be a whole number, got {text[:40]!r}")
    return v


def _length(text: str, what: str) -> int:
    try:
        v = float(text)
    except ValueError:
        raise VazaoError(f"{what} {text[:40]!r} is not a number") from None
    if not math.isfinite(v) or v < 0 or v != int(v) or v > limits.MAX_CONTEXT:
        raise VazaoError(f"{what} must be a whole number of tokens from 0 to {limits.MAX_CONTEXT:,}, got {text[:40]!r}")
    return int(v)


# ---- reading messy cells ----------------------------------------------------------------------------
_APPROX = re.compile(r"(?:~|≈|∼|about\s+|approx(?:\.|imately)?\s*|ca\.?\s+|circa\s+)\s*(\S.*)", re.I)
_THOUSANDS = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?")
_UNSURE = re.compile(r"\s*(?:\(\s*\?\s*\)|\?+)\s*$")
GEMM_MODE = re.compile(  # the serving file's "gemm=X moe=Y": not a KV dtype
    r"(?<![a-z])gemm\s*=\s*([a-z0-9_.-]+)", re.I)
_MOE = re.compile(r"(?<![a-z_])moe\s*=\s*([a-z0-9_.-]+)", re.I)
# the serving file's quantization modes → weight formats (native = the checkpoint's own 16-bit weights)
_GEMM_FORMATS = {"native": "bf16", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "fp8_block": "fp8",
                 "nvfp4": "nvfp4", "mxfp4": "mxfp4", "w4a16_awq": "int4-awq", "int4_awq": "int4-awq"}
_LAYOUT = re.compile(r"(?<![a-z_])(moe_tp|moe_ep|attention_dp)\s*=\s*([0-9]{1,6})(?![0-9])", re.I)
_NOTES_TP = (re.compile(r"(?<![a-z_])(?:tp|tensor[ _-]?parallel(?:ism)?(?:[ _-]?(?:size|degree))?)\s*[=:]?\s*"
                        r"([0-9]{1,4})(?![0-9])", re.I),
             re.compile(r"([0-9]{1,4})[ -]way tensor[ _-]?parallel", re.I))
_NOTES_PP = (re.compile(r"(?<![a-z_])(?:pp|pipeline[ _-]?parallel(?:ism)?(?:[ _-]?(?:size|degree))?)\s*[=:]?\s*"
                        r"([0-9]{1,4})(?![0-9])", re.I),
             re.compile(r"([0-9]{1,4})[ -]way pipeline[ _-]?parallel", re.I))
_FORM_FACTOR = re.compile(r"\s*\(\s*form[ -]factor (?:not stated|unknown|unstated)\s*\)\s*", re.I)
_VARIABLE = re.compile(r"variable|dataset|varies", re.I)
# metrics named loosely: (the metric read, why)
_METRIC_READINGS = {
    name: ("output_tok_s_total", f"metric {name!r} does not say per GPU or total: read as the total output "
                                 "tokens/s over all GPUs")
    for name in ("output_tok_s", "output_tokens_s", "output_tokens_per_s", "output_tok/s")}


def _number(text: str | None, what: str, notes: list[str]) -> str:
    """A number cell as a careful reader reads it: '~500' is 500 (an approximation, noted), '1,024' is 1024."""
    t = (text or "").strip()
    m = _APPROX.fullmatch(t)
    if m:
        _note(notes, f"{what} {t[:40]!r} is approximate: read as {m.group(1).strip()[:40]}")
        t = m.group(1).strip()
    if _THOUSANDS.fullmatch(t):
        t = t.replace(",", "")
    return t


def _precision(text: str | None, what: str, notes: list[str]) -> str:
    """'FP8?' is FP8 that the source was not sure of (noted)."""
    t = (text or "").strip()
    if _UNSURE.search(t) and _UNSURE.sub("", t):
        clean = _UNSURE.sub("", t).strip()
        _note(notes, f"{what} {t[:40]!r} is uncertain in the source: read as {clean[:40]}")
        return clean
    return t


def _note(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def _from_notes(patterns: tuple[re.Pattern, ...], text: str) -> int | None:
    for pat in patterns:
        m = pat.search(text)
        if m and int(m.group(1)) > 0:
            return int(m.group(1))
    return None


def _parallel(d: dict, notes: list[str]) -> tuple[int, int, int]:
    """(gpu_count, tp, pp); an empty tp or pp is what the notes say, else what gpu_count leaves (noted)."""
    def count(col: str, maximum: float) -> int | None:
        t = _number(d.get(col), col, notes)
        return int(_positive(t, col, maximum, integer=True)) if t else None

    n, tp, pp = count("gpu_count", 1e5), count("tp", 4096), count("pp", 4096)
    text = d.get("notes") or ""
    if pp is None:
        pp = _from_notes(_NOTES_PP, text)
        if pp is not None:
            _note(notes, f"pp not stated: {pp}, as the notes say")
        elif tp is not None and n is not None and n > tp and n % tp == 0 and "pipeline" in text.lower():
            pp = n // tp
            _note(notes, f"pp not stated: gpu_count / tp = {pp} (the notes name pipeline parallelism)")
        else:
            pp = 1
            _note(notes, "pp not stated: 1 (no pipeline parallelism)")
    if tp is None:
        tp = _from_notes(_NOTES_TP, text)
        if tp is not None:
            _note(notes, f"tp not stated: {tp}, as the notes say")
        elif n is not None:
            if n % pp:
                raise VazaoError(f"tp not stated, and gpu_count {n} is not a multiple of pp = {pp}")
            tp = n // pp
            _note(notes, f"tp not stated: gpu_count / pp = {tp}")
        else:
            raise VazaoError("gpu_count and tp are both empty: how many GPUs served the row is not stated")
    if n is None:
        n = tp * pp
        _note(notes, f"gpu_count not stated: tp × pp = {n}")
    if tp > 4096 or pp > 4096 or n > 1e5:
        raise VazaoError(f"gpu_count {n}, tp {tp}, pp {pp}: more than vazao models")
    return n, tp, pp


def _layout(text: str) -> dict[str, int]:
    """The serving file's moe_tp=A moe_ep=B attention_dp=C, kept on the row for the predictor (expert and
    attention data parallelism are modelled: validate/predict.py row_deployment)."""
    return {k.lower(): int(v) for k, v in _LAYOUT.findall(text)}


# TensorRT-LLM's performance overview (docs/source/performance/perf-overview.md, v1.0: "Reproducing Benchmarked
# Results") runs its MoE models with `enable_attention_dp: true` in the LLM API options and --ep.
_PERF_OVERVIEW = re.compile(r"perf-overview", re.I)


# The perf overview's dataset sizes per ISL/OSL ("Preparing a Dataset": $num_requests), the same table in the
# v0.17 and v1.0 docs (perf-overview.md).
_PERF_OVERVIEW_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500,
                           (2048, 128): 3000, (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000,
                           (500, 2000): 3000, (20000, 2000): 1000}
_NUM_REQUESTS = re.compile(r"\bnum[_-]requests\s*[=:]\s*([0-9]{1,9})\b", re.I)


def _requests(d: dict, family: str, input_len: int, output_len: int, condition: Condition,
              attention_dp: int | None, notes: list[str]) -> int | None:
    """The requests a max-load run queued: stated (num_requests=N), else, where the perf overview's recipe splits
    them among attention-data-parallel GPUs (each would otherwise hold the engine's whole batch cap), the
    recipe's dataset size (noted). A run on one engine fills it whatever the count: None."""
    m = _NUM_REQUESTS.search(d.get("notes") or "")
    if m:
        stated = int(m.group(1))
        if stated < 1:
            raise VazaoError("num_requests must be at least 1")
        return stated
    n = _PERF_OVERVIEW_REQUESTS.get((input_len, output_len))
    if (condition.kind != "max" or family != "trtllm" or n is None or (attention_dp or 0) < 2
            or not _PERF_OVERVIEW.search(d.get("source") or "")):
        return None
    _note(notes, "requests not stated: the perf overview's dataset size for this ISL/OSL ($num_requests)")
    return n


def _attention_dp(d: dict, family: str, version: tuple[int, ...] | None, model: str, tp: int,
                  layout: dict[str, int], notes: list[str]) -> int | None:
    """The attention data-parallel degree: the layout's (attention_dp=N), else, for a MoE row of TensorRT-LLM's
    v1.0 performance overview on more than one GPU, the recipe's (tp, noted); None where neither says."""
    stated = layout.get("attention_dp")
    if stated is not None or family != "trtllm" or tp < 2 or version is None or version < (1,):
        return stated
    if not _PERF_OVERVIEW.search(d.get("source") or ""):
        return None
    from vazao.catalog.models import get_model

    try:
        moe = get_model(model).is_moe
    except (NotFoundError, VazaoError):
        return None
    if not moe:
        return None
    _note(notes, "attention data parallelism not stated: TensorRT-LLM's v1.0 performance overview runs MoE "
                 "models with enable_attention_dp (its reproduction recipe)")
    return tp


@cache
def _datasets() -> tuple[dict, ...]:
    from vazao.catalog._load import load_yaml

    return tuple(load_yaml("datasets.yaml")["datasets"])


def _named(alias: str, text: str) -> bool:
    return re.search(r"(?<![a-z0-9])" + re.escape(alias.lower()) + r"(?![a-z0-9])", text.lower()) is not None


def _dataset_for(cell: str, d: dict, model: str | None) -> dict | None:
    """The dataset a length cell, the notes or the source name; an MLPerf row of a benchmark model that
    names none: that benchmark's dataset."""
    for text in (cell, d.get("notes") or "", d.get("source") or ""):
        for ds in _datasets():
            if any(_named(a, text) for a in (ds["name"], *ds.get("aliases", ()))):
                return ds
    context = " ".join((d.get("engine") or "", d.get("source") or "", d.get("notes") or "")).lower()
    if model and "mlperf" in context:
        for ds in _datasets():
            if model in ds.get("mlperf_models", ()):
                return ds
    return None


def _catalog_model(name: str) -> str | None:
    from vazao.catalog.models import get_model

    try:
        return get_model(name).name
    except (NotFoundError, VazaoError):
        return None


def _lengths(d: dict, notes: list[str]) -> tuple[int, int]:
    """input_len and output_len; a cell a dataset defines ('ShareGPT (variable)') is the dataset's mean."""
    out = []
    for col, side in (("input_len", "input"), ("output_len", "output")):
        cell = (d.get(col) or "").strip()
        t = _number(cell, col, notes)
        try:
            out.append(_length(t, col))
            continue
        except VazaoError:
            if not (_VARIABLE.search(cell) or any(_named(a, cell) for ds in _datasets()
                                                  for a in (ds["name"], *ds.get("aliases", ())))):
                raise
        model = _catalog_model(d.get("model") or "")
        ds = _dataset_for(cell, d, model)
        if ds is None:
            raise VazaoError(f"{col} {cell[:40]!r}: not a number of tokens, and no dataset is named whose lengths "
                             f"vazao knows ({', '.join(str(x['aliases'][0]) for x in _datasets())})")
        fig = ds[side]
        mean = float(fig["mean_tokens"])
        label = ds["aliases"][0] if ds.get("aliases") else ds["name"]
        text = f"{col} {cell[:40]!r}: {label}'s mean {side}, {mean:g} tokens ({fig['cite']})"
        cap = (ds.get("output_cap") or {}).get(model or "") if side == "output" else None
        if cap and mean > cap["max_tokens"]:
            mean = float(cap["max_tokens"])
            text += f", capped at {mean:g} ({cap['cite']})"
        _note(notes, text)
        out.append(max(1, round(mean)))
    return out[0], out[1]


def _gpu(text: str, notes: list[str]) -> str:
    """A GPU whose form factor is not stated ('H100-80GB (form factor not stated)'): its SXM variant."""
    if not _FORM_FACTOR.search(text):
        return text
    from vazao.catalog.local import resolve_accelerator

    base = _FORM_FACTOR.sub(" ", text).strip()
    head, _, rest = base.partition("-")
    for cand in (base, f"{head}-SXM-{rest}" if rest else f"{head}-SXM", f"{head}-SXM"):
        try:
            acc = resolve_accelerator(cand)
        except VazaoError:
            continue
        if "sxm" in acc.name.lower():
            _note(notes, f"GPU {text[:60]!r}: form factor not stated, predicted as the SXM variant ({acc.name})")
            return cand
    return text


def _multiplied_layout(layout: dict[str, int], tp: int, pp: int, count: int, gpu: str,
                       notes: list[str]) -> tuple[int, int]:
    """(tp, gpu_count) of a row whose tp and gpu_count are its moe_tp × moe_ep and reach past one node. In
    TensorRT-LLM's layout (moe_tp × moe_ep = tp) that is a valid 64-GPU layout, but the serving file holds
    the same measurement twice: aiconfigurator row `…_c4_tp8_ep8_954` as gpu_count 64, tp 64, moe_tp=8
    moe_ep=8 (TPOT 8.584 ms) and `…_c4_tp8_0_ep8_0_1252` as 8 GPUs, tp 8, moe_tp=1 moe_ep=8 (8.584 ms):
    the file's converter multiplied tp by ep. Read as tp = moe_tp GPUs with the experts split moe_ep ways
    inside it (layout's moe_tp becomes tp ÷ moe_ep)."""
    ep, mtp = layout.get("moe_ep") or 0, layout.get("moe_tp") or 0
    if ep < 2 or mtp < ep or mtp % ep or mtp * ep != tp or count != tp * pp:
        return tp, count
    from vazao.catalog.local import resolve_accelerator

    try:
        per_node = resolve_accelerator(gpu).gpus_per_node
    except VazaoError:
        return tp, count
    if per_node is None or tp <= per_node or mtp > per_node:
        return tp, count
    _note(notes, f"gpu_count {count} and tp {tp} are moe_tp × moe_ep ({mtp} × {ep}) past one {per_node}-GPU node, "
                 "the file's converter multiplying tp by ep (the serving file repeats its 8-GPU tp8_ep8 "
                 f"measurements at 64): read as tp {mtp} on {mtp * pp} GPUs, experts split {ep} ways")
    layout["moe_tp"] = mtp // ep
    return mtp, mtp * pp


def _served_weights(weights: str, family: str, gpu: str, model: str, notes: list[str]) -> str:
    """NVFP4 that the engine cannot run on this GPU, for a model whose own 4-bit checkpoint is MXFP4 (gpt-oss on
    Hopper under TensorRT-LLM, which 'runs MXFP4, not NVFP4, on Hopper': formats.yaml): the MXFP4 checkpoint."""
    from vazao.catalog.checkpoints import checkpoints_of
    from vazao.catalog.formats import get_format, support
    from vazao.catalog.local import resolve_accelerator

    try:
        fmt = get_format(weights)
        if fmt.name != "nvfp4":
            return weights
        acc = resolve_accelerator(gpu)
        name = _catalog_model(model)
        mx = get_format("mxfp4")
        if (name is None or support(fmt, acc, family).status != "unsupported"
                or support(mx, acc, family).status == "unsupported"
                or not any(c.fmt == mx.name for c in checkpoints_of(name))):
            return weights
    except VazaoError:
        return weights
    _note(notes, f"precision_weights {weights!r}: {family} has no NVFP4 kernels on {acc.name}; {name}'s own 4-bit "
                 "checkpoint is MXFP4, read as mxfp4")
    return "mxfp4"


# An NVIDIA Model Optimizer FP8 checkpoint named by the row (its model or its source:
# "nvidia/Llama-3.1-8B-Instruct-FP8", aiconfigurator's "nvidia_Llama-3.1-8B-Instruct-FP8.csv"). Its
# hf_quant_config.json declares the KV cache's quantization (kv_cache_quant_algo: FP8 in
# nvidia/Llama-3.1-70B-Instruct-FP8's, modelopt 0.23.0, as ai-dynamo/aiconfigurator keeps it in
# aic-core/src/aiconfigurator_core/model_configs/), which aiconfigurator's generator passes to the engine
# (--kv-cache-dtype; generator/config/backend_config_mapping.yaml) and vLLM reads itself since PR #29980
# (kv-cache-dtype auto). TensorRT-LLM's docs show an older export of the same repositories with
# kv_cache_quant_algo null, and trtllm-bench then sets FP8 anyway.
_MODELOPT_FP8 = re.compile(r"(?<![a-z0-9])nvidia[/_]+[a-z0-9][a-z0-9._-]{0,80}?[-_]fp8(?![a-z0-9])", re.I)


def _modelopt_fp8(d: dict) -> str | None:
    """The NVIDIA Model Optimizer FP8 checkpoint the row's model or source names, if any."""
    m = _MODELOPT_FP8.search(d.get("model") or "") or _MODELOPT_FP8.search(d.get("source") or "")
    return m.group(0)[:60] if m else None


def _kv(text: str, weights: str, notes: list[str], checkpoint: str | None = None) -> tuple[str, str]:
    """(kv, weights): the serving file's 'gemm=X moe=Y' names the GEMM and MoE quantization, not the KV dtype:
    that is the engine's default for the checkpoint (noted), or FP8 where the row names a ModelOpt FP8
    checkpoint (`checkpoint`, noted); an empty weight format is the GEMM's."""
    gemm = GEMM_MODE.search(text)
    if not gemm:
        if checkpoint and text.strip().lower() == "not stated" and weights.strip().lower() == "fp8":
            return _checkpoint_note(checkpoint, notes), weights
        return text, weights
    moe = _MOE.search(text)
    mode = gemm.group(1).lower()
    if not weights:
        fmt = _GEMM_FORMATS.get(mode)
        if fmt is None:
            raise VazaoError(f"precision_weights empty and GEMM mode {mode[:20]!r} unknown "
                             f"(known: {', '.join(_GEMM_FORMATS)})")
        weights = fmt
        _note(notes, f"precision_weights not stated: {fmt}, the GEMM mode {mode!r}"
                     + (f" (MoE {moe.group(1)})" if moe else ""))
    if checkpoint and weights.strip().lower() == "fp8":
        return _checkpoint_note(checkpoint, notes), weights
    _note(notes, f"KV dtype not stated ({text.strip()[:40]!r} gives the GEMM and MoE quantization): the engine's "
                 "default for the checkpoint")
    return text, weights


def _checkpoint_note(checkpoint: str, notes: list[str]) -> str:
    _note(notes, f"KV dtype not stated: the checkpoint the row names ({checkpoint!r}, NVIDIA Model Optimizer FP8) "
                 "declares an FP8 KV cache, which aiconfigurator's generator passes to the engine: fp8")
    return "fp8"


_BUDGET = re.compile(r"\b(max[_-]num[_-]batched[_-]tokens|max[_-]num[_-]tokens|max[_-]prefill[_-]tokens)\s*[=:]\s*"
                     r"(\d+)\b", re.I)
# aiconfigurator's deployment generator, which launched the serving file's runs: an aggregated worker's step
# budget is its batch + the input length + 1,500 tokens (TensorRT-LLM: max_num_tokens, rounded up to its
# 32-token KV blocks; vLLM: --max-num-batched-tokens), SGLang's --max-prefill-tokens the input length + 1,500
# (ai-dynamo/aiconfigurator: src/aiconfigurator/cli/backends/trtllm.py of its first commit, efcae124c;
# generator/rule_plugin/{trtllm,vllm,sglang}.rule since 95ddf241a). The batch is the concurrency.
_AIC_MARGIN_TOKENS = 1500
_AIC_BLOCK_TOKENS = 32


def _aic_closed_loop(d: dict, condition: Condition) -> bool:
    """A fixed-concurrency row of aiconfigurator's silicon sample: a run its deployment generator launched."""
    src = (d.get("source") or "").lower()
    return "aiconfigurator" in src and "silicon_sample" in src and condition.kind == "concurrency"


_SILICON_CONCURRENCY = re.compile(r"\bsilicon_concurrency\s*=\s*([0-9]{1,7})\b")


def _run_clients(d: dict, condition: Condition, notes: list[str]) -> Condition:
    """The clients an aiconfigurator silicon-sample run had: its source's silicon_concurrency, where the row's
    concurrency differs. The serving file's TensorRT-LLM 1.3 gpt-oss-120b rows give concurrency=48 for the run
    `…_4000x1000_c192_tp4_…` (silicon_concurrency=192), the concurrency divided by tp; every other row of the
    file that names silicon_concurrency (2,666) agrees with it."""
    m = _SILICON_CONCURRENCY.search(d.get("source") or "")
    if not m or not _aic_closed_loop(d, condition):
        return condition
    clients = _positive(m.group(1), "silicon_concurrency", 1e6, integer=True)
    if clients == condition.value:
        return condition
    # one wording, the row's own figures left out: the summary counts the rows of each reading
    _note(notes, "concurrency differs from the run's silicon_concurrency (its source, the client count the run "
                 "was named for): read as the run's clients")
    return Condition("concurrency", clients)


def _step_budget(d: dict, family: str, input_len: int, condition: Condition,
                 notes: list[str]) -> tuple[int | None, bool]:
    """(step tokens, whether they only cap the prompt tokens of a step) the deployment ran with: stated in the
    notes (max_num_batched_tokens=N, max_num_tokens=N, max_prefill_tokens=N), else, for a closed-loop row of
    aiconfigurator's silicon sample, what its generator sets (noted); (None, False): the profile's."""
    m = _BUDGET.search(d.get("notes") or "")
    if m:
        n = int(m.group(2))
        if not 1 <= n <= limits.MAX_MODEL_CONTEXT:
            raise VazaoError(f"{m.group(1)} {n} out of range (1 to {limits.MAX_MODEL_CONTEXT})")
        return n, "prefill" in m.group(1).lower()
    if not _aic_closed_loop(d, condition):
        return None, False
    batch = int(condition.value)
    if family == "sglang":
        n = input_len + _AIC_MARGIN_TOKENS
        # one wording per engine, the row's own figure left out: the summary counts the rows of each reading
        _note(notes, f"step budget not stated: aiconfigurator's generated SGLang deployment, --max-prefill-tokens "
                     f"= input + {_AIC_MARGIN_TOKENS}")
        return n, True
    n = batch + input_len + _AIC_MARGIN_TOKENS
    if family == "trtllm":
        n = -(-n // _AIC_BLOCK_TOKENS) * _AIC_BLOCK_TOKENS
    flag = "max_num_tokens" if family == "trtllm" else "--max-num-batched-tokens"
    _note(notes, f"step budget not stated: aiconfigurator's generated {family} deployment, {flag} = batch "
                 f"(the concurrency) + input + {_AIC_MARGIN_TOKENS}"
                 + (f", rounded up to {_AIC_BLOCK_TOKENS}" if family == "trtllm" else ""))
    return n, False


_MIXED = re.compile(r"(enable[_-]mixed[_-]chunks?|mixed[_-]chunks?)\s*(?:[=:]\s*(true|false|1|0|on|off))?", re.I)
_MEASURED_ON = re.compile(r"\bmeasured=(\d{4})-(\d{2})-(\d{2})")
# aiconfigurator's generator has passed --enable-mixed-chunk to an aggregated SGLang worker since 2026-01-19
# (ai-dynamo/aiconfigurator 07a377923, generator/rule_plugin/sglang.rule: `agg enable_mixed_chunk = true`):
# a prefill batch then runs with the running decodes instead of before them. A row measured earlier, or whose
# date its source does not give, keeps SGLang's default (prefill first).
_AIC_MIXED_SINCE = (2026, 1, 19)


def _mixed_chunks(d: dict, family: str, condition: Condition, notes: list[str]) -> bool:
    m = _MIXED.search(d.get("notes") or "")
    if m:
        return (m.group(2) or "true").lower() in ("true", "1", "on")
    when = _MEASURED_ON.search(d.get("source") or "")
    if family != "sglang" or when is None or not _aic_closed_loop(d, condition):
        return False
    if tuple(int(x) for x in when.groups()) < _AIC_MIXED_SINCE:
        return False
    _note(notes, "mixed chunks not stated: aiconfigurator's generated SGLang deployment passes "
                 "--enable-mixed-chunk (since 2026-01-19; the row's measurement date is later)")
    return True


def _row(d: dict, line: int, strict: bool = False) -> MeasuredRow:
    notes: list[str] = []
    metric = d["metric"].strip()
    if metric.lower() in _METRIC_READINGS:
        metric, why = _METRIC_READINGS[metric.lower()]
        _note(notes, why)
    if metric not in METRICS:
        raise VazaoError(f"unknown metric {metric[:40]!r} (known: {', '.join(METRICS)})")
    family = engine_family(d["engine"])
    if family is None:
        raise VazaoError(f"unknown engine {d['engine'][:40]!r} (known: trtllm, vllm, sglang, llama.cpp, "
                         "and wrappers such as nim(trtllm))")
    count, tp, pp = _parallel(d, notes)
    if count % (tp * pp):
        raise VazaoError(f"gpu_count {count} is not a multiple of tp × pp = {tp * pp}")
    text = d.get("notes") or ""
    layout = _layout(text)
    moe_tp = layout.get("moe_tp") or 0
    if moe_tp > tp * pp and count == tp * pp:
        # the serving file's own contradiction (Qwen3-235B FP8 on "1 × H200", tp 1, notes moe_tp=2: 236 GB of
        # weights on one 141 GB card): the layout the notes name is the one that held the model
        if tp == 1 and (layout.get("moe_ep") or 1) == 1:  # moe_ep=0 in the file: no expert parallelism
            # tp 1 with the experts split moe_tp ways is data parallelism over moe_tp GPUs: each runs attention
            # whole for its own requests, and the MoE layers shard over all of them
            # (vLLM's --data-parallel-size without --enable-expert-parallel, SGLang's --enable-dp-attention)
            _note(notes, f"gpu_count {count} and tp {tp} cannot be the layout the notes name (moe_tp={moe_tp}): "
                         f"read as {moe_tp} GPUs, attention data-parallel, the experts split {moe_tp} ways")
            layout["attention_dp"] = moe_tp
        else:
            _note(notes, f"gpu_count {count} and tp {tp} cannot be the layout the notes name (moe_tp={moe_tp}): "
                         f"read as tp {moe_tp} on {moe_tp * pp} GPUs")
        tp, count = moe_tp, moe_tp * pp
    gpu = _gpu(d["gpu"].strip(), notes)
    tp, count = _multiplied_layout(layout, tp, pp, count, gpu, notes)
    weights = _precision(d["precision_weights"], "precision_weights", notes)
    kv = _precision(d.get("precision_kv_or_compute") or "not stated", "precision_kv_or_compute", notes) or "not stated"
    kv, weights = _kv(kv, weights, notes, _modelopt_fp8(d))
    weights = _served_weights(weights, family, gpu, d["model"].strip(), notes)
    input_len, output_len = _lengths(d, notes)
    condition, how = _condition(d["concurrency_or_batch"])
    if how:
        _note(notes, how)
    condition = _run_clients(d, condition, notes)
    value = _positive(_number(d["value"], "value", notes), "value", 1e12)
    step_tokens, step_cap = _step_budget(d, family, input_len, condition, notes)
    mixed = _mixed_chunks(d, family, condition, notes)
    version = parse_version(d.get("engine_version") or "")
    adp = _attention_dp(d, family, version, d["model"].strip(), tp, layout, notes)
    requests = _requests(d, family, input_len, output_len, condition, adp, notes)
    if strict and notes:
        more = f" (and {len(notes) - 1} more)" if len(notes) > 1 else ""
        raise VazaoError(f"strict: the row needs a reading it does not state: {notes[0]}{more}", parameter="strict")
    low = text.lower()
    return MeasuredRow(
        id=d["id"].strip() or f"line-{line}", line=line, engine=d["engine"].strip(), family=family,
        version=version, model=d["model"].strip(),
        weights=weights, kv=kv, gpu=gpu, gpu_count=count, tp=tp, pp=pp,
        input_len=input_len, output_len=output_len, condition=condition, metric=metric, value=value,
        median="median" in low and "mean" not in low, source=(d.get("source") or "").strip(),
        assumed=tuple(notes), moe_tp=layout.get("moe_tp"), moe_ep=layout.get("moe_ep"),
        attention_dp=adp, step_tokens=step_tokens, step_tokens_cap=step_cap,
        mixed_chunks=mixed, requests=requests,
    )


def read_rows(path: Path | str, strict: bool = False) -> tuple[list[MeasuredRow], list[Problem]]:
    """Every row of a measurements CSV; lines that cannot be read come back as Problems. strict: a row that
    needs a reading it does not state (MeasuredRow.assumed) is a Problem too."""
    text = inputs.read_text(path, "measurements CSV", max_bytes=limits.MAX_CSV_BYTES)
    return parse_rows(text, str(path), strict=strict)


def parse_rows(text: str, where: str = "measurements CSV",
               strict: bool = False) -> tuple[list[MeasuredRow], list[Problem]]:
    if "\x00" in text:
        raise VazaoError(f"{where}: contains NUL bytes; not a CSV file")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        raise VazaoError(f"{where}: empty, or no header line") from None
    header = [h.strip().lstrip("\ufeff") for h in header]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise VazaoError(f"{where}: missing column(s) {', '.join(missing)} (the schema of "
                         "shared/data/published-measurements.csv)")
    rows: list[MeasuredRow] = []
    problems: list[Problem] = []
    while True:
        line = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(Problem(line, "", f"malformed CSV: {exc}"))
            continue
        if not cells or all(not c.strip() for c in cells):
            continue
        if len(rows) + len(problems) >= limits.MAX_ROWS:
            raise VazaoError(f"{where}: more than {limits.MAX_ROWS:,} rows")
        if len(cells) != len(header):
            problems.append(Problem(line, cells[0][:40] if cells else "",
                                    f"malformed CSV: {len(cells)} cells where the header has {len(header)}"))
            continue
        if any(len(c) > limits.MAX_CELL for c in cells):
            problems.append(Problem(line, cells[0][:40], f"a cell longer than {limits.MAX_CELL:,} characters"))
            continue
        d = dict(zip(header, cells, strict=True))
        try:
            rows.append(_row(d, line, strict))
        except VazaoError as exc:
            problems.append(Problem(line, d.get("id", "")[:40], str(exc)))
    return rows, problems
