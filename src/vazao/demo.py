"""The first screen (`vazao demo`, `make run`) as one typed result: the seeds' headline answers,
computed by the library, then the model × GPU × format configurations that fit one GPU, cheapest
first, what the others would need, and the commands to run next.

The headline scenarios are the ones the seeds work out: seed 004's Llama 3.1 70B on an eight-GPU
H100 node (latency floor, crossover batch) and its support conversation (the bill with and without
the cached system prompt), seed 003's FP8 on an RTX 3060 (Ampere: emulated) against an H100."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from vazao.catalog.prices import share_str, usd_str
from vazao.resultfiles import from_document

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment

MODELS = ("llama-3.1-8b", "qwen2.5-32b", "llama-3.1-70b", "mixtral-8x7b")
GPUS = ("rtx-4090", "l40s", "a100-sxm-80gb", "h100-sxm")
FORMATS = ("bf16", "fp8", "int4-awq")
ENGINE = "vllm"

# seed 004: the node, and the support assistant priced at Sonnet 5.5 with the 5-minute cache
NODE = ("llama-3.1-70b", "h100-sxm", "bf16", 8)
SUPPORT = {"system": 6000, "turns": 8, "user": 300, "reply": 250}
SUPPORT_PRICE, SUPPORT_CACHE = "sonnet-5.5", "5m"
# seed 003: "um modelo de 8 bilhões ocupa 16 GB"; the RTX 3060 cluster (Ampere) against Hopper
FP8_MODEL, FP8_GPUS = "llama-3.1-8b", ("rtx-3060", "h100-sxm")
REPORT_BATCHES = (1, 8, 32, 256)  # the node's estimate in the HTML report (`vazao estimate -b`)


def _usd(x: Decimal | None) -> str | None:
    return None if x is None else usd_str(x)


@dataclass(frozen=True)
class FloorAnswer:
    """How fast one token can come on the node: at the physical limit and under the engine profile."""

    deployment: str
    model: str
    gpu: str
    count: int
    ideal_floor_s: float
    ideal_tokens_per_s_b1: float
    floor_s: float
    tokens_per_s_b1: float
    engine: str
    tokens_per_s_b1_band: tuple[float, float] | None = None  # the engine profile's 80% band (low, high)


@dataclass(frozen=True)
class CacheAnswer:
    """One support conversation's API bill, without and with its system prompt cached."""

    price: str
    system_tokens: int
    turns: int
    uncached_usd: Decimal
    cached_usd: Decimal
    saving_share: Decimal
    cache_ttl: str

    def to_json(self) -> dict:
        return {**self.__dict__, "uncached_usd": usd_str(self.uncached_usd), "cached_usd": usd_str(self.cached_usd),
                "saving_share": share_str(self.saving_share)}

    @classmethod
    def from_json(cls, d: Mapping) -> CacheAnswer:
        return from_document(cls, d)


@dataclass(frozen=True)
class FormatOnGpu:
    gpu: str
    status: str  # native | emulated | unsupported
    reason: str
    compute_speedup: float  # a prompt's prefill FLOP time at 16 bits over its FLOP time at this format


@dataclass(frozen=True)
class FormatAnswer:
    """One format against 16 bits on old and new silicon: the memory it saves, the math it speeds up."""

    model: str
    format: str
    baseline: str  # the 16-bit format it is compared with
    weights_bytes: float
    weights_bytes_16bit: float
    gpus: tuple[FormatOnGpu, ...]

    def to_json(self) -> dict:
        return {**self.__dict__, "gpus": [g.__dict__ for g in self.gpus]}

    @classmethod
    def from_json(cls, d: Mapping) -> FormatAnswer:
        return from_document(cls, d)


@dataclass(frozen=True)
class CrossoverAnswer:
    """The batch where a decode step's compute time reaches its memory time on the node."""

    deployment: str
    gpu: str
    count: int
    weights_only_batch: int | None  # context → 0 at the physical limit: the FLOPs/bandwidth ratio
    batch_at_context: int | None  # the scenario's requests under the engine profile (KV reads too)
    engine: str


@dataclass(frozen=True)
class Headlines:
    floor: FloorAnswer
    cache: CacheAnswer
    fp8: FormatAnswer
    crossover: CrossoverAnswer

    def to_json(self) -> dict:
        return {"floor": self.floor.__dict__, "cache": self.cache.to_json(), "fp8": self.fp8.to_json(),
                "crossover": self.crossover.__dict__}

    @classmethod
    def from_json(cls, d: Mapping) -> Headlines:
        return from_document(cls, d)


@dataclass(frozen=True)
class FitRow:
    """One configuration that fits one GPU; every throughput names the batch it is computed at."""

    model: str
    gpu: str
    format: str
    status: str  # native | emulated
    max_seqs: int  # sequences of prompt + answer the KV cache holds
    tokens_per_s_b1: float
    ttft_s_b1: float
    max_batch: int  # max load's batch: max_seqs, or fewer when the engine caps it; never more
    tokens_per_s_max: float  # output tokens/s at max_batch
    usd_per_gpu_hour: Decimal
    usd_per_mtok: Decimal | None  # output tokens, at max_batch, all GPU time charged to them
    # its 80% band (low, high): the max-load throughput's band (vazao.bands), inverted; None: uncalibrated profile
    usd_per_mtok_band: tuple[Decimal, Decimal] | None = None

    def to_json(self) -> dict:
        band = self.usd_per_mtok_band
        return {**self.__dict__, "usd_per_gpu_hour": usd_str(self.usd_per_gpu_hour),
                "usd_per_mtok": _usd(self.usd_per_mtok),
                "usd_per_mtok_band": None if band is None else [usd_str(band[0]), usd_str(band[1])]}

    @classmethod
    def from_json(cls, d: Mapping) -> FitRow:
        return from_document(cls, d)


@dataclass(frozen=True)
class Misfit:
    """A model and format that fits none (or only some) of the GPUs alone: what each other GPU needs."""

    model: str
    format: str
    needs: tuple[tuple[str, int | None], ...]  # (gpu, fewest GPUs of it that fit; None: more than max_gpus)
    unsupported: tuple[str, ...]  # GPUs whose engine cannot run the format
    max_gpus: int

    def to_json(self) -> dict:
        return {"model": self.model, "format": self.format, "max_gpus": self.max_gpus,
                "needs": [{"gpu": g, "count": n} for g, n in self.needs], "unsupported": list(self.unsupported)}

    @classmethod
    def from_json(cls, d: Mapping) -> Misfit:
        return cls(d["model"], d["format"], tuple((n["gpu"], n["count"]) for n in d["needs"]),
                   tuple(d["unsupported"]), d["max_gpus"])


@dataclass(frozen=True)
class NextCommand:
    command: str  # a vazao command line, without the shell
    purpose: str


@dataclass(frozen=True)
class Demo:
    input_tokens: int
    output_tokens: int
    engine: str
    headlines: Headlines
    rows: tuple[FitRow, ...]  # cheapest $/Mtok first, then fastest at max load
    misfits: tuple[Misfit, ...]
    next_commands: tuple[NextCommand, ...]
    report_scenario: str  # the deployment `--report` describes

    def to_json(self) -> dict:
        return {"kind": "demo", "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "engine": self.engine,
                "headlines": self.headlines.to_json(), "rows": [r.to_json() for r in self.rows],
                "misfits": [m.to_json() for m in self.misfits],
                "next_commands": [c.__dict__ for c in self.next_commands], "report_scenario": self.report_scenario}

    @classmethod
    def from_json(cls, d: Mapping) -> Demo:
        """`vazao demo --json`'s document read back."""
        return from_document(cls, d)


def node_deployment(ideal: bool = False):
    """Seed 004's node: the demo's default scenario and the deployment its HTML report shows."""
    from vazao.physics.deployment import make_deployment

    model, gpu, fmt, count = NODE
    return make_deployment(model, gpu, fmt, count=count, engine=ENGINE, ideal=ideal)


def node_estimate(input_tokens: int, output_tokens: int, batches: tuple[int, ...] = (1,), ideal: bool = False):
    from vazao.analytic import estimate

    return estimate(node_deployment(ideal), list(batches), input_tokens, output_tokens)


def _cache_answer() -> CacheAnswer:
    from vazao.catalog.prices import get_price
    from vazao.cost.conversation import Conversation, bill_conversation

    table, conv = get_price(SUPPORT_PRICE), Conversation(**SUPPORT)
    plain = bill_conversation(conv, table).total_usd
    cached = bill_conversation(conv, table, SUPPORT_CACHE).total_usd
    return CacheAnswer(table.id, conv.system, conv.turns, plain, cached, 1 - cached / plain, SUPPORT_CACHE)


def _fp8_answer(input_tokens: int) -> FormatAnswer:
    from vazao.analytic import prefill_cost
    from vazao.catalog.formats import get_format
    from vazao.catalog.models import get_model
    from vazao.physics.deployment import make_deployment
    from vazao.physics.memory import weights_bytes

    arch, fp8, wide = get_model(FP8_MODEL), get_format("fp8"), get_format("bf16")  # both GPUs run bf16 natively
    gpus = []
    for gpu in FP8_GPUS:
        narrow = make_deployment(arch, gpu, fp8, engine=ENGINE, strict=False)
        base = make_deployment(arch, gpu, wide, engine=ENGINE, strict=False)
        # the math alone: a 16-bit deployment that spills to host memory would make any format look fast
        speedup = prefill_cost(base, 1, input_tokens).compute_s / prefill_cost(narrow, 1, input_tokens).compute_s
        gpus.append(FormatOnGpu(narrow.accelerator.id, narrow.support.status, narrow.support.reason, speedup))
    return FormatAnswer(arch.name, fp8.name, wide.name, weights_bytes(arch, fp8), weights_bytes(arch, wide),
                        tuple(gpus))


def headlines(input_tokens: int, output_tokens: int) -> tuple[Headlines, object]:
    """The four answers, and the node's estimate under the engine profile (what --report shows)."""
    est = node_estimate(input_tokens, output_tokens, REPORT_BATCHES)
    ideal = node_estimate(input_tokens, output_tokens, ideal=True)
    b1 = next(r for r in est.rows if r.batch == 1)
    model, gpu, _fmt, count = NODE
    floor = FloorAnswer(ideal.deployment, model, gpu, count, ideal.latency_floor_s, ideal.rows[0].tokens_per_s_total,
                        est.latency_floor_s, b1.tokens_per_s_total, ENGINE,
                        None if b1.tokens_per_s_band is None else (b1.tokens_per_s_band.low, b1.tokens_per_s_band.high))
    cross = CrossoverAnswer(ideal.deployment, gpu, count, ideal.crossover_batch_weights_only, est.crossover_batch,
                            ENGINE)
    return Headlines(floor, _cache_answer(), _fp8_answer(input_tokens), cross), est


def build_demo(input_tokens: int = 1024, output_tokens: int = 256) -> tuple[Demo, object]:
    """The first screen, and the node's Estimate its report is made of."""
    heads, est = headlines(input_tokens, output_tokens)
    rows, misfits = fit_rows(MODELS, GPUS, FORMATS, input_tokens, output_tokens, ENGINE)
    demo = Demo(input_tokens, output_tokens, ENGINE, heads, rows, misfits,
                next_commands(rows, input_tokens, output_tokens), est.deployment)
    return demo, est


def estimate_result(est) -> dict:
    """The node's estimate as `vazao estimate --json` writes it: what the estimate report reads."""
    return {"kind": "estimate", **node_deployment().to_json(), "ideal": False, **est.to_json()}


# ---- the configurations ---------------------------------------------------------------------------
def _fit_row(dep: Deployment, input_tokens: int, output_tokens: int) -> FitRow | None:
    from vazao.analytic import estimate
    from vazao.cost.selfhost import analytic_throughput, gpu_rate, selfhost_cost

    est = estimate(dep, [1], input_tokens, output_tokens)
    if not est.fit.fits or est.max_batch < 1:
        return None
    rate, source = gpu_rate(dep.accelerator, None)
    cost = selfhost_cost(dep.label(), dep.count, rate, source, analytic_throughput(dep, input_tokens, output_tokens))
    b1 = est.rows[0]
    return FitRow(dep.model.name, dep.accelerator.id, dep.weight_format.name, dep.support.status,
                  est.fit.max_concurrent_sequences, b1.tokens_per_s_total, b1.ttft_s, est.max_batch,
                  est.max_load_tokens_per_s, rate, cost.usd_per_mtok_output, cost.usd_per_mtok_output_band)


def _misfit(model: str, fmt: str, missing: list[str], unsupported: list[str], context: int,
            max_gpus: int = 8) -> Misfit:
    from vazao.plan.alternatives import what_fits

    needs = []
    for gpu in missing:
        same = [a for a in what_fits(model, gpu, fmt, context, engine=ENGINE, max_gpus=max_gpus) if a.fmt == fmt]
        needs.append((gpu, same[0].count if same else None))
    needs.sort(key=lambda n: (n[1] is None, n[1] or 0))
    return Misfit(model, fmt, tuple(needs), tuple(unsupported), max_gpus)


def fit_rows(models, gpus, formats, input_tokens: int, output_tokens: int,
             engine: str = ENGINE) -> tuple[tuple[FitRow, ...], tuple[Misfit, ...]]:
    """Each model × GPU × format on one GPU: the rows that fit, cheapest $/Mtok first (then the fastest at
    max load), and per model and format the fewest GPUs each other GPU would need."""
    from vazao.catalog.formats import get_format, support
    from vazao.catalog.local import resolve_accelerator
    from vazao.physics.deployment import make_deployment

    rows, misfits = [], []
    for model in models:
        for fname in formats:
            fmt, missing, refused = get_format(fname), [], []
            for gname in gpus:
                acc = resolve_accelerator(gname)
                if support(fmt, acc, engine).status == "unsupported":
                    refused.append(acc.id)
                    continue
                row = _fit_row(make_deployment(model, acc, fmt, engine=engine), input_tokens, output_tokens)
                if row is None:
                    missing.append(acc.id)
                else:
                    rows.append(row)
            if missing or refused:
                misfits.append(_misfit(model, fmt.name, missing, refused, input_tokens + output_tokens))
    rows.sort(key=lambda r: (r.usd_per_mtok is None, r.usd_per_mtok or 0, -r.tokens_per_s_max))
    return tuple(rows), tuple(misfits)


def next_commands(rows: tuple[FitRow, ...], input_tokens: int, output_tokens: int) -> tuple[NextCommand, ...]:
    """Four commands that take the screen further: the cheapest row under a latency SLO, a plan for
    real traffic, a benchmark of the user's own server and that benchmark's report."""
    model, gpu, fmt = ((rows[0].model, rows[0].gpu, rows[0].format) if rows else NODE[:3])
    return (
        NextCommand(f"vazao cost selfhost {model} -g {gpu} -n 1 -f {fmt} -i {input_tokens} -o {output_tokens} "
                    "--analytic", "the cheapest row's $/Mtok under the default latency SLO"),
        NextCommand(f"vazao plan -m {model},{NODE[0]} -g {','.join(GPUS)} --traffic 10/s",
                    "the cheapest deployment that meets the SLO at your traffic"),
        NextCommand("vazao bench http://127.0.0.1:8000/v1 -w chat -c 1,4,16 -o run.json",
                    "measure your own OpenAI-compatible server"),
        NextCommand("vazao report --run run.json -o run.html", "that run as an HTML report, plots included"),
    )
