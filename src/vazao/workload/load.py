"""Loading a workload: a built-in name or a YAML file, validated (workload.schema), its files read
(workload.readers), built into a Workload with overrides applied."""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.workload.agent import AgentShape
from vazao.workload.readers import _check_trace, _read_lengths, _read_trace, _resolve
from vazao.workload.schema import _ArrivalModel, _DelayModel, _DistModel, _WorkloadModel
from vazao.workload.types import (
    AgentTasks,
    Arrival,
    Delay,
    Dist,
    MultiTurn,
    Prefix,
    Workload,
)

FIXED = re.compile(r"fixed:([0-9]{1,9})/([0-9]{1,9})")


def _dist(m: _DistModel | int, base: Path | None, where: str) -> Dist:
    if isinstance(m, int):
        if m < 1:
            raise VazaoError(f"{where}: a fixed length must be positive, got {m}")
        return Dist("fixed", value=float(m))
    values = tuple(m.values or ())
    if m.dist == "empirical" and m.file:
        values = tuple(_read_lengths(_resolve(m.file, base), m.column, where))
    return Dist(m.dist, value=m.value, low=m.low, high=m.high, mean=m.mean, std=m.std, median=m.median,
                sigma=m.sigma, values=values, min=m.min, max=m.max)


def _arrival(m: _ArrivalModel, base: Path | None) -> Arrival:
    if m.kind == "trace":
        if m.file:
            path = _resolve(m.file, base)
            ts, prompts, outputs = _read_trace(path)
            _check_trace(ts, f"trace {path}")
        else:
            ts, prompts, outputs = list(m.timestamps or ()), [], []
            _check_trace(ts, "arrival.timestamps")
        if any(v <= 0 for v in prompts + outputs):
            raise VazaoError("trace token counts must be positive")
        t0 = ts[0]
        return Arrival("trace", timestamps=tuple(t - t0 for t in ts), trace_prompt=tuple(prompts),
                       trace_output=tuple(outputs))
    return Arrival(m.kind, rate=m.rate, concurrency=m.concurrency, burst_size=m.size,
                   burst_interval_s=m.interval_s)


def workload_from_dict(data: Mapping[str, Any], *, name: str = "custom", base: Path | None = None,
                       where: str = "workload") -> Workload:
    """Validate a parsed YAML mapping (clear one-line messages) and build the Workload."""
    if not isinstance(data, Mapping):
        raise VazaoError(f"{where}: expected a mapping of workload settings at the top level")
    try:
        m = _WorkloadModel.model_validate(dict(data))
    except ValidationError as exc:
        raise VazaoError(f"{where}: {_explain(exc)}") from None
    conv = None
    if m.conversation:
        turns = _dist(m.conversation.turns, base, f"{where}: conversation.turns")
        user = _dist(m.conversation.user, base, f"{where}: conversation.user") if m.conversation.user else None
        think = m.conversation.think_time_s
        delay = think.build() if isinstance(think, _DelayModel) else Delay("fixed", mean=float(think))
        conv = MultiTurn(turns, user, delay)
    agent, requests = None, m.requests
    if m.agent is not None:
        g = m.agent
        latency = g.tool_latency_s
        try:
            agent = AgentTasks(AgentShape(g.calls, g.context, g.reply, tool=g.tool, agents=g.agents,
                                          merge_reply=g.merge_reply),
                               latency.build() if isinstance(latency, _DelayModel) else Delay("fixed",
                                                                                            mean=float(latency)))
        except VazaoError as exc:
            raise VazaoError(f"{where}: agent: {exc}") from None
        if g.tasks is not None:
            requests = g.tasks * agent.loop.requests_per_task
    assert (m.prompt is not None and m.output is not None) or agent is not None  # the schema's check
    w = Workload(
        name=m.name or name,
        arrival=_arrival(m.arrival, base),
        # an agent workload's lengths: its first prompt and reply (what describe() and capacity read as typical)
        prompt=_dist(m.prompt, base, f"{where}: prompt") if m.prompt is not None else Dist(
            "fixed", value=float(agent.loop.context) if agent else 1.0),
        output=_dist(m.output, base, f"{where}: output") if m.output is not None else Dist(
            "fixed", value=float(agent.loop.reply) if agent else 1.0),
        prefixes=tuple(Prefix(p.id, p.tokens, p.share) for p in m.prefixes),
        conversation=conv,
        requests=requests,
        duration_s=m.duration_s,
        seed=m.seed,
        warmup=m.warmup,
        description=m.description,
        agent=agent,
    )
    return w.with_overrides()


def _explain(exc: ValidationError) -> str:
    parts = []
    errors = exc.errors()
    for err in errors:
        loc = ".".join(str(x) for x in err["loc"] if not (isinstance(x, str) and x.startswith("function-")))
        # pydantic tries `int` before the distribution mapping: report the mapping's complaint
        # (a sibling error of the same union member, one level up)
        if err["type"] in ("int_type", "int_parsing") and len(err["loc"]) > 1 and any(
                e is not err and len(e["loc"]) >= len(err["loc"]) and e["loc"][:len(err["loc"]) - 1] == err["loc"][:-1]
                for e in errors):
            continue
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = "missing required field"
        elif err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] in ("model_type", "model_attributes_type", "dict_type"):
            msg = f"expected a mapping of settings (a length may also be a plain integer), got {err['input']!r}"
        loc = loc.replace("._DistModel", "").replace("_DistModel", "")
        parts.append(f"{loc}: {msg}" if loc else msg)
    if not parts:
        first = errors[0]
        parts.append(f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}")
    return "; ".join(dict.fromkeys(parts))[:500]


def _exists(path: Path) -> bool:
    try:
        path.stat()
    except (OSError, ValueError):  # absent, a name too long for the file system, a NUL byte
        return False
    return True


def builtin_workloads() -> list[str]:
    folder = resources.files("vazao.examples")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_workload(spec: str, *, requests: int | None = None, rate: float | None = None,
                  concurrency: int | None = None, seed: int | None = None,
                  duration_s: float | None = None) -> Workload:
    """A built-in name (chat, rag, batch, agent, summarize, support), `fixed:IN/OUT` (every request IN
    prompt and OUT answer tokens, Poisson 1/s, 400 requests: the shape benchmarks such as aiconfigurator's
    quote as ISL/OSL) or a YAML path, with overrides."""
    if not isinstance(spec, str) or not spec.strip():
        raise VazaoError("workload: give a built-in name or a YAML file")
    if len(spec) > 4096:
        raise VazaoError(f"workload {spec[:40]!r}… is {len(spec):,} characters: neither a built-in name nor a path")
    fixed = FIXED.fullmatch(spec.strip())
    if fixed:
        n_in, n_out = (int(inputs.number(x, f"workload {spec.strip()}: {what} tokens", minimum=1,
                                         maximum=limits.MAX_REQUEST_TOKENS, integer=True))
                       for x, what in zip(fixed.groups(), ("prompt", "output"), strict=True))
        w = workload_from_dict({"arrival": {"kind": "poisson", "rate": 1}, "prompt": n_in, "output": n_out,
                                "requests": 400, "seed": 1}, name=f"fixed:{n_in}/{n_out}",
                               where=f"workload fixed:{n_in}/{n_out}")
        return w.with_overrides(requests=requests, rate=rate, concurrency=concurrency, seed=seed,
                                duration_s=duration_s)
    path = Path(spec).expanduser()
    if path.suffix in (".yaml", ".yml") or _exists(path) or "/" in spec:
        what = "workload file"
        text = inputs.read_text(inputs.input_stream(path, what), what, max_bytes=limits.MAX_WORKLOAD_BYTES)
        where, name, base = f"workload {inputs._show(path.name)}", path.stem[:256], path.parent
    else:
        if spec not in builtin_workloads():
            from vazao.errors import NotFoundError

            if len(spec) > 256:
                raise VazaoError(f"unknown workload {spec[:40]!r}… ({len(spec):,} characters)")
            raise NotFoundError("workload", spec, builtin_workloads())
        text = resources.files("vazao.examples").joinpath(f"{spec}.yaml").read_text(encoding="utf-8")
        where, name, base = f"workload {spec}", spec, None
    data = inputs.loads_yaml(text, where)
    w = workload_from_dict(data or {}, name=name, base=base, where=where)
    return w.with_overrides(requests=requests, rate=rate, concurrency=concurrency, seed=seed,
                            duration_s=duration_s)
