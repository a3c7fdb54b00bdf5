"""Fuzzing every parser of a user's file: random bytes, random nested JSON, YAML-ish text and
mutations of real inputs. Each parser either returns a valid object or raises VazaoError (which the
CLI turns into exit 2 and one line), never any other exception."""

from __future__ import annotations

import itertools
import json
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_gguf import tiny_llama
from vazao.budget import parse_budget, summary_from_json
from vazao.catalog.arch import ModelArch
from vazao.catalog.gguf import gguf_to_arch, parse_gguf_bytes
from vazao.catalog.models import from_hf_config, load_model
from vazao.catalog.prices import get_price, parse_prices
from vazao.cost.prefix import read_requests
from vazao.cost.usage import bill_usage
from vazao.errors import VazaoError
from vazao.workload import Workload, load_workload, workload_from_dict

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GPT5 = get_price("gpt-5")

LEAVES = (st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
          | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
JSON_VALUES = st.recursive(LEAVES, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                                         max_size=4), max_leaves=25)
NUMBERS = (st.integers(min_value=-2**70, max_value=2**70) | st.floats(allow_nan=False, allow_infinity=False)
           | st.booleans() | st.none() | st.text(max_size=6))

LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
         "max_position_embeddings": 131072}
CONFIG_KEYS = [*LLAMA, "head_dim", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
               "n_shared_experts", "shared_expert_intermediate_size", "first_k_dense_replace", "kv_lora_rank",
               "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "sliding_window",
               "use_sliding_window", "max_window_layers", "layer_types", "sliding_window_pattern",
               "tie_word_embeddings", "text_config", "quantization_config"]


def _valid_or_vazao(fn, *args) -> Any:
    try:
        return fn(*args)
    except VazaoError:
        return None


_ROOT: list[Path] = []  # the module's one scratch folder, made and removed by _scratch


@pytest.fixture(scope="module", autouse=True)
def _scratch():
    """One folder for every example of the module, removed after it: hypothesis runs hundreds of examples per
    test and a function-scoped tmp_path would be shared between them, while a folder per example left in the
    system's temporary directory piled up there (690 a run)."""
    with tempfile.TemporaryDirectory(prefix="vazao-fuzz-") as root:
        _ROOT.append(Path(root))
        yield
        _ROOT.pop()


def _tmpfile(data: bytes | str, suffix: str) -> Path:
    # a fresh folder for each example, inside the module's scratch folder
    folder = Path(tempfile.mkdtemp(dir=_ROOT[-1]))
    p = folder / f"input{suffix}"
    p.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return p


def _check_arch(arch: ModelArch | None) -> None:
    if arch is None:
        return
    assert 1 <= arch.num_kv_heads <= arch.num_heads
    assert arch.total_params > 0 and arch.kv_bytes_per_token() > 0
    assert arch.active_params <= arch.total_params + arch.lm_head_params


# ---- config.json ---------------------------------------------------------------------------------
@FUZZ
@given(st.dictionaries(st.sampled_from(CONFIG_KEYS), JSON_VALUES | NUMBERS, max_size=6))
def test_config_with_random_values(changes):
    _check_arch(_valid_or_vazao(from_hf_config, {**LLAMA, **changes}))


@FUZZ
@given(JSON_VALUES)
def test_config_from_random_json(value):
    _check_arch(_valid_or_vazao(from_hf_config, value))


@FEW
@given(st.binary(max_size=600) | st.text(max_size=300).map(str.encode))
def test_config_file_from_random_bytes(data):
    loaded = _valid_or_vazao(load_model, str(_tmpfile(data, ".json")))
    _check_arch(loaded.arch if loaded else None)


# ---- GGUF headers --------------------------------------------------------------------------------
TINY, _ = tiny_llama()
HEADER_END = parse_gguf_bytes(TINY).data_offset


@st.composite
def mutated_gguf(draw) -> bytes:
    """The tiny llama's real header with a few bytes overwritten, inserted or cut."""
    data = bytearray(TINY)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(4, HEADER_END - 1))
        how = draw(st.sampled_from(["set", "u64", "cut", "insert"]))
        if how == "set":
            data[at] = draw(st.integers(0, 255))
        elif how == "u64":  # a length or a count replaced by an extreme value
            data[at:at + 8] = draw(st.sampled_from([0, 1, 2**31, 2**32 - 1, 2**63, 2**64 - 1])).to_bytes(8, "little")
        elif how == "cut":
            del data[at:at + draw(st.integers(1, 64))]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
    return bytes(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_gguf())
def test_gguf_mutations(data):
    info = _valid_or_vazao(parse_gguf_bytes, data)
    if info is not None:
        _check_arch(_valid_or_vazao(gguf_to_arch, info))


@FEW
@given(st.binary(max_size=400))
def test_gguf_random_bytes(data):
    _valid_or_vazao(parse_gguf_bytes, b"GGUF" + data)
    loaded = _valid_or_vazao(load_model, str(_tmpfile(b"GGUF" + data, ".gguf")))
    _check_arch(loaded.arch if loaded else None)


# ---- workloads -----------------------------------------------------------------------------------
YAML_TOKENS = ["arrival:", "kind:", "poisson", "concurrency", "burst", "trace", "rate:", "prompt:", "output:",
               "requests:", "duration_s:", "seed:", "warmup:", "dist:", "lognormal", "uniform", "normal",
               "empirical", "fixed", "median:", "sigma:", "mean:", "std:", "low:", "high:", "value:", "values:",
               "min:", "max:", "prefixes:", "conversation:", "turns:", "think_time_s:", "id:", "tokens:", "share:",
               "- ", "[", "]", "{", "}", ",", ":", "&a", "*a", "<<:", "!!float", "!!python/object", ".inf", ".nan",
               "-1", "0", "1", "2.5", "1e9", "1.0e+30", "99999999999999999999", "null", "true", "'x'", "\n",
               "\n  ", "\n    ", "\t", "#", "\xff", "\x00", "%YAML", "---", "...", "|", ">"]
YAMLISH = st.lists(st.sampled_from(YAML_TOKENS), max_size=40).map(" ".join)
CHAT = resources.files("vazao.examples").joinpath("chat.yaml").read_text(encoding="utf-8")


@st.composite
def mutated_text(draw, base: str) -> str:
    text = base
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, max(0, len(text) - 1)))
        cut = at + draw(st.integers(0, 3))
        text = text[:at] + draw(st.sampled_from(YAML_TOKENS) | st.text(max_size=3)) + text[cut:]
    return text


def _first_requests(w: Workload | None) -> None:
    if w is None:
        return
    for r in itertools.islice(_valid_or_vazao(w.iter_specs) or (), 50):
        assert r.prompt_tokens >= 0 and r.output_tokens >= 0


@FUZZ
@given(YAMLISH | mutated_text(CHAT))
def test_workload_yaml(text):
    _first_requests(_valid_or_vazao(load_workload, str(_tmpfile(text, ".yaml"))))


WORKLOAD_KEYS = ["arrival", "prompt", "output", "requests", "duration_s", "seed", "warmup", "prefixes",
                 "conversation"]


@FUZZ
@given(st.dictionaries(st.sampled_from(WORKLOAD_KEYS), JSON_VALUES | NUMBERS, max_size=4),
       st.sampled_from([{"kind": "poisson", "rate": 2}, {"kind": "concurrency", "concurrency": 4},
                        {"kind": "burst", "size": 3, "interval_s": 1}]),
       st.dictionaries(st.sampled_from(["dist", "median", "sigma", "mean", "std", "low", "high", "value", "min",
                                        "max", "values"]), NUMBERS, max_size=4))
def test_workload_values(changes, arrival, dist):
    base = {"arrival": arrival, "prompt": {"dist": "lognormal", "median": 100, "sigma": 1, **dist}, "output": 10,
            "requests": 20}
    _first_requests(_valid_or_vazao(workload_from_dict, {**base, **changes}))


@FUZZ
@given(st.lists(st.sampled_from(["timestamp", "prompt_tokens", "output_tokens", ",", "0", "1.5", "-1", "nan",
                                 "inf", "1e400", "99999999999", "x", "\n", "\x00", "#", " ", '"']), max_size=30)
       .map("".join))
def test_trace_files(text):
    trace = _tmpfile(text, ".csv")
    spec = {"arrival": {"kind": "trace", "file": str(trace)}, "prompt": 10, "output": 10}
    _first_requests(_valid_or_vazao(workload_from_dict, spec))
    lengths = {"arrival": {"kind": "poisson", "rate": 1}, "requests": 5, "output": 5,
               "prompt": {"dist": "empirical", "file": str(trace)}}
    _first_requests(_valid_or_vazao(workload_from_dict, lengths))


# ---- usage logs and prefix logs ------------------------------------------------------------------
USAGE = (EXAMPLES / "usage.jsonl").read_text(encoding="utf-8")
REQUESTS = (EXAMPLES / "requests.jsonl").read_text(encoding="utf-8")


@st.composite
def usage_lines(draw) -> str:
    usage = draw(st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens", "input_tokens",
                                                  "output_tokens", "cache_read_input_tokens",
                                                  "cache_creation_input_tokens", "prompt_tokens_details"]),
                                 NUMBERS | JSON_VALUES, max_size=4))
    obj = {"model": draw(st.sampled_from(["gpt-5", "gpt-5-mini", "x" * 300, "", 7, None])), "usage": usage}
    return json.dumps(obj)


@FUZZ
@given(st.lists(usage_lines() | st.text(max_size=40) | JSON_VALUES.map(json.dumps), max_size=6).map("\n".join)
       | mutated_text(USAGE))
def test_usage_logs(text):
    ub = _valid_or_vazao(bill_usage, _tmpfile(text, ".jsonl"), GPT5)
    if ub is not None:
        assert ub.bill.total_usd >= 0 and ub.bill.requests >= 1


@FEW
@given(st.binary(max_size=500))
def test_usage_log_random_bytes(data):
    _valid_or_vazao(bill_usage, _tmpfile(data, ".jsonl"), GPT5)


@FEW
@given(mutated_text(REQUESTS) | st.lists(JSON_VALUES.map(json.dumps), max_size=5).map("\n".join))
def test_prefix_logs(text):
    out = _valid_or_vazao(read_requests, _tmpfile(text, ".jsonl"))
    if out is not None:
        assert out[0]


# ---- prices, budgets, run results ----------------------------------------------------------------
PRICES = ("prices:\n  - id: mine\n    provider: me\n    usd_per_mtok: {input: 1.5, output: 2, cache_read: 0.1, "
          "cache_write: {5m: 2}}\n    long_context:\n      - above_input_tokens: 200000\n"
          "        usd_per_mtok: {input: 3, output: 4}\n    batch_discount: 0.5\n    context_window: 1000000\n"
          "    aliases: [m]\n    source: test\n    as_of: '2026-01'\n")
BUDGET = (EXAMPLES / "budget.yaml").read_text(encoding="utf-8")


@FUZZ
@given(YAMLISH | mutated_text(PRICES))
def test_prices(text):
    tables = _valid_or_vazao(parse_prices, text, "fuzz")
    for t in (tables or {}).values():
        assert t.base.input >= 0 and t.base.output >= 0


@FUZZ
@given(YAMLISH | mutated_text(BUDGET))
def test_budgets(text):
    b = _valid_or_vazao(parse_budget, text, "fuzz")
    if b is not None:
        assert b.tasks and all(0 <= t.max_error_rate <= 1 and t.calls >= 1 for t in b.tasks)


SUMMARY = {"requests": 12, "errors": 6, "duration_s": 10.0, "ttft_s": {"p95": 0.3}, "e2e_s": {"p95": 1.0},
           "request_throughput_per_s": 1.2, "output_tokens_per_s": 100.0, "total_tokens_per_s": 200.0}


@FUZZ
@given(st.dictionaries(st.sampled_from([*SUMMARY, "itl_s", "tpot_s", "goodput_requests_per_s", "prompt_tokens",
                                        "source"]), NUMBERS | JSON_VALUES, max_size=4))
def test_run_summaries(changes):
    s = _valid_or_vazao(summary_from_json, {**SUMMARY, **changes}, "fuzz")
    if s is not None:
        assert 0 <= s.errors <= s.requests
