"""What a plan searches: the inputs, the traffic, and the deployment shapes to try.

A shape is everything about one replica (model, format, KV dtype, accelerator, tp × pp, engine); the
number of replicas is not part of it — the evaluation picks the fewest that carry the traffic within
the SLO. Shapes the silicon or the engine refuses, that do not fit, or that cannot meet a latency limit
even alone are pruned before anything is simulated, each with its reason."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.results import SLO
from vazao.workload.traffic import Traffic

# cost: the cheapest deployment that carries the traffic within the SLO (vazao's question);
# throughput: the most output tokens/s per GPU on gpu_count GPUs within the SLO (aiconfigurator's)
OBJECTIVES = ("cost", "throughput")
PARALLEL = (1, 2, 4, 8, 16, 32, 64)


def slo_with_user_tps(slo: SLO, user_tps: float | None, *, slo_given: bool) -> SLO:
    """`slo` with "at least `user_tps` output tokens/s per user" as tpot_mean ≤ 1 / user_tps (aiconfigurator's
    tokens/s/user is the mean decode rate a user sees). With the default SLO, its TPOT term gives way."""
    if user_tps is None:
        return slo
    tps = float(inputs.positive(user_tps, "tokens/s per user", maximum=1e5))
    limits = {k: v for k, v in slo.limits.items() if slo_given or k.split("_", 1)[0] != "tpot"}
    limits["tpot_mean"] = min(limits.get("tpot_mean", 1.0 / tps), 1.0 / tps)
    return SLO(limits, slo.judge)


@dataclass(frozen=True)
class Lengths:
    """The workload's prompt and output lengths: means (throughput), p99 (memory per sequence) and the
    longest request with its conversation history (what the per-sequence context must cover)."""

    prompt_mean: float
    output_mean: float
    context_p99: int
    longest: int = 0  # workload.longest_request: prefix + history + prompt + answer
    # every drawn request's tokens at its end, ascending (workload.specs.request_tokens): the share a context
    # leaves out; () where not drawn
    requests: tuple[int, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def of(cls, workload) -> Lengths:
        """The workload's own requests (its plan, drawn with its seed to workload.specs.CONTEXT_SAMPLE of them,
        as `vazao bench` and the simulator draw them): a prompt with its shared prefix and repeated history."""
        from vazao.workload.specs import sample_specs

        specs = sample_specs(workload)
        if not specs:
            return cls(1.0, 1.0, 1, 1, (1,))
        p = np.array([r.prompt_tokens for r in specs], dtype=float)
        o = np.array([r.output_tokens for r in specs], dtype=float)
        tokens = np.sort((p + o).astype(np.int64))
        return cls(float(p.mean()), float(o.mean()), int(np.percentile(tokens, 99)), int(tokens[-1]),
                   tuple(int(t) for t in tokens))

    def refused_share(self, model_max: int) -> float:
        """The share of the workload's requests longer than the model's own context (`model_max` tokens):
        what every engine answers with an error (vLLM and SGLang HTTP 400), whatever it is set to."""
        if self.longest <= model_max:
            return 0.0
        if not self.requests:
            return 1.0
        return 1.0 - bisect.bisect_right(self.requests, model_max) / len(self.requests)

    def context(self, model_max: int) -> int:
        """The per-sequence context a deployment is set to (--max-model-len, a llama.cpp slot): the
        longest request rounded up to 256 tokens, at most the model's own context."""
        from vazao.workload.specs import round_context

        return round_context(max(self.longest, self.context_p99), model_max)


@dataclass(frozen=True)
class PlanInputs:
    workload: str  # built-in name or YAML path
    traffic: Traffic
    slo: SLO
    models: tuple[str, ...]
    gpus: tuple[str, ...]
    formats: tuple[str, ...]
    engines: tuple[str, ...] = ()  # () : each accelerator's default engine
    kv_formats: tuple[str, ...] = ()  # () : each engine's default KV dtype for the format
    max_gpus: int = 8
    quality_floor: float | None = None
    quality_file: str | None = None  # quality rows (vazao quality -o) over the catalog's
    requests: int = 400  # simulated per candidate
    simulate_top: int = 48  # shapes simulated, cheapest first by the analytic estimate
    seed: int | None = None  # the workload's draws; None: its own seed, as `vazao cost` and `vazao bench` draw it
    profile: str | None = None
    slo_is_default: bool = False
    gpu_prices: Mapping[str, float] = field(default_factory=dict)  # $/GPU-hour over the catalog's rental price
    objective: str = "cost"  # see OBJECTIVES
    gpu_count: int | None = None  # throughput: the GPUs every deployment uses (replicas × tp × pp)
    curves: int = 0  # latency–throughput curves of the best this many simulated deployments (plan.curves)
    disagg: bool = True  # also try the best colocated deployments as prefill and decode pools (evaluate.DISAGG_*)
    # exclude cards whose support by the engine has ended or is announced to end within this many months
    # (catalog/engine_support.py); None: every card the engine runs is tried, old-release ones with a note
    support_horizon_months: int | None = None
    # price every GPU as owned (cost.own.owned_gpu_hour: the published purchase price over the part's life
    # plus electricity at the candidate's draw) instead of rented; cards with no published price are left out
    buy: bool = False

    def __post_init__(self) -> None:
        for name in ("models", "gpus", "formats"):
            if not getattr(self, name):
                raise VazaoError(f"plan: give at least one of {name}")
        if self.objective not in OBJECTIVES:
            raise VazaoError(f"plan objective {str(self.objective)[:40]!r}: one of {', '.join(OBJECTIVES)}")
        if self.objective == "throughput" and self.gpu_count is None:
            raise VazaoError("the throughput objective (the most tok/s per GPU) needs the GPU count to spread "
                             "over (gpu_count)")
        if self.gpu_count is not None:
            inputs.number(self.gpu_count, "GPU count", minimum=1, maximum=4096, integer=True)
        inputs.number(self.max_gpus, "max GPUs", minimum=1, maximum=4096, integer=True)
        inputs.number(self.curves, "curves", minimum=0, maximum=10, integer=True)
        inputs.number(self.requests, "simulated requests per candidate", minimum=20, maximum=100_000, integer=True)
        inputs.number(self.simulate_top, "candidates to simulate", minimum=1, maximum=10_000, integer=True)
        if self.quality_floor is not None:
            inputs.number(self.quality_floor, "quality floor", minimum=0.0, maximum=1.0)
        if self.support_horizon_months is not None:
            inputs.number(self.support_horizon_months, "support horizon (months)", minimum=0,
                          maximum=limits.MAX_SUPPORT_HORIZON_MONTHS, integer=True)
        if self.quality_file is not None:
            from vazao.plan.quality import read_rows

            read_rows(self.quality_file)  # a bad file is one line before any work

    def to_json(self) -> dict:
        return {"workload": self.workload, "traffic": self.traffic.to_json(), "slo": dict(self.slo.limits),
                "slo_judge": self.slo.judge,
                "slo_is_default": self.slo_is_default, "models": list(self.models), "gpus": list(self.gpus),
                "formats": list(self.formats), "engines": list(self.engines), "kv_formats": list(self.kv_formats),
                "max_gpus": self.max_gpus, "quality_floor": self.quality_floor, "quality_file": self.quality_file,
                "requests": self.requests,
                "simulate_top": self.simulate_top, "seed": self.seed, "profile": self.profile,
                "gpu_prices": dict(self.gpu_prices), "objective": self.objective, "gpu_count": self.gpu_count,
                "curves": self.curves, "disagg": self.disagg, "support_horizon_months": self.support_horizon_months,
                "buy": self.buy}

    def check_workload(self) -> None:
        """Refuse, before any work, an SLO term the workload cannot have: TPOT and ITL need answers of
        more than one token."""
        from vazao.workload import load_workload

        w = load_workload(self.workload, seed=self.seed)
        one_token = w.output.kind == "fixed" and w.output.value <= 1 or (w.output.max is not None and w.output.max <= 1)
        bad = [k for k in self.slo.limits if k.split("_", 1)[0] in ("tpot", "itl")]
        if one_token and bad:
            raise VazaoError(f"SLO term {bad[0]}: workload {w.name} answers with one token, so it has no time per "
                             "output token or inter-token latency; limit ttft or e2e instead")

    @property
    def gpu_budget(self) -> int:
        """The most GPUs one deployment may use: the throughput objective's count, else max_gpus."""
        return self.gpu_count if self.objective == "throughput" else self.max_gpus


@dataclass(frozen=True, order=True)
class Shape:
    """One replica's deployment, before any traffic."""

    model: str
    fmt: str
    kv: str | None  # None: the engine's default for the format
    gpu: str
    tp: int
    pp: int
    engine: str

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp

    def label(self) -> str:
        par = f"tp{self.tp}" + (f" pp{self.pp}" if self.pp > 1 else "")
        return f"{self.model} {self.fmt} on {self.gpus_per_replica}× {self.gpu} {par} ({self.engine})"


def _engines_for(gpu: str, inp: PlanInputs) -> list[str]:
    from vazao.catalog.local import resolve_accelerator
    from vazao.physics.deployment import default_engine
    from vazao.physics.profiles import get_engine

    acc = resolve_accelerator(gpu)
    if not inp.engines:
        return [default_engine(acc)]
    return [e for e in inp.engines if acc.vendor in get_engine(e).vendors]


def shapes(inp: PlanInputs) -> Iterator[Shape]:
    """Every (model, format, KV, accelerator, tp × pp, engine) the inputs allow, within max GPUs.
    llama.cpp splits a model over GPUs by layer (pp); the other engines by tensor parallelism."""
    from vazao.catalog.local import resolve_accelerator

    n = 0
    for model in inp.models:
        for gpu in inp.gpus:
            node = resolve_accelerator(gpu).gpus_per_node or 1
            for engine in _engines_for(gpu, inp):
                for fmt in inp.formats:
                    for kv in inp.kv_formats or (None,):
                        for k in PARALLEL:
                            if k > inp.gpu_budget:
                                break
                            for tp, pp in layouts(k, engine, node):
                                n += 1
                                if n > limits.MAX_SHAPES:
                                    raise VazaoError(f"plan: over {limits.MAX_SHAPES:,} deployment shapes; narrow the "
                                                     "models, GPUs, formats or engines")
                                yield Shape(model, fmt, kv, gpu, tp, pp, engine)


def layouts(gpus: int, engine: str, gpus_per_node: int) -> list[tuple[int, int]]:
    """(tp, pp) ways to spread one replica over `gpus`. llama.cpp splits by layer (pp) only. The others
    split each layer (tp); past one node also tp within the node and pp across nodes, where a stage
    boundary crosses the network once instead of every layer's all-reduce (physics/step.py)."""
    if engine == "llama.cpp":
        return [(1, gpus)]
    out = [(gpus, 1)]
    if gpus > gpus_per_node and gpus % gpus_per_node == 0:
        out.append((gpus_per_node, gpus // gpus_per_node))
    return out
