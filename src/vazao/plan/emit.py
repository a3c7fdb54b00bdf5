"""A planned candidate as a launch spec: the settings the plan simulated, in an engine's terms."""

from __future__ import annotations

from dataclasses import dataclass

from vazao.cost.capacity import sequence_limit
from vazao.errors import VazaoError
from vazao.plan.commands import EngineCommand, LaunchSpec, launch_command
from vazao.plan.evaluate import Candidate
from vazao.plan.space import Lengths


def spec_for(c: Candidate, lengths: Lengths, port: int = 8000) -> LaunchSpec:
    from vazao.catalog.local import resolve_accelerator
    from vazao.catalog.models import load_model
    from vazao.physics.profiles import get_engine

    eng = get_engine(c.shape.engine)
    # the workload's longest request with its conversation history (a shorter --max-model-len answers
    # the longer requests with HTTP 400), as the plan simulated it
    max_len = c.context or lengths.context(load_model(c.shape.model).arch.max_context)
    cc = resolve_accelerator(c.shape.gpu).compute_capability  # picks --dtype; the engine's start-up rules
    return LaunchSpec(model=c.shape.model, fmt=c.shape.fmt, kv=c.kv_format, tp=c.shape.tp, pp=c.shape.pp,
                      replicas=c.replicas, max_model_len=max_len, max_num_seqs=c.max_batch,
                      max_num_batched_tokens=eng.max_num_batched_tokens,
                      gpu_memory_utilization=eng.gpu_memory_utilization, prefix_caching=eng.prefix_caching,
                      port=port, compute_capability=cc)


def spec_on(c: Candidate, lengths: Lengths, engine: str | None = None) -> tuple[LaunchSpec, str | None]:
    """spec_for on `c`'s own engine, or on `engine` (the same deployment elsewhere: its batch cap held to what
    that engine accepts) with a note saying so — the plan simulated `c.shape.engine`."""
    import dataclasses

    from vazao.physics.profiles import engine_key, get_engine

    spec = spec_for(c, lengths)
    if engine is None or engine_key(engine) == engine_key(c.shape.engine):
        return spec, None
    key = engine_key(engine)
    other = _elsewhere(c, key)
    # what that engine holds of the same deployment: its own layout (a llama.cpp slot reserves the whole
    # context up front), memory reserve and sequence ceiling, as the planner caps its own shapes
    held = sequence_limit(other, max(1, round(lengths.prompt_mean)), max(1, round(lengths.output_mean)),
                          spec.max_model_len)
    if held < 1:
        raise VazaoError(f"the same deployment on {key}: {other.label()} holds no {spec.max_model_len:,}-token "
                         f"sequence in {key}'s memory plan; plan on {key} to search what it runs")
    note = f"planned and simulated with the {c.shape.engine} profile, not {key}'s"
    if spec.max_num_seqs > held:
        ceiling = get_engine(key).seq_ceiling
        why = (f"the {ceiling} {key} accepts" if held == ceiling
               else f"the {held} sequences of {spec.max_model_len:,} tokens its memory holds")
        note += f"; its batch cap {spec.max_num_seqs} held to {why}"
    return dataclasses.replace(spec, max_num_seqs=min(spec.max_num_seqs, held)), note


def _elsewhere(c: Candidate, key: str):
    """`c`'s deployment on engine `key` (same model, format, KV dtype, GPUs and split), or a one-line refusal
    where that engine does not run it there (the format on that silicon, the KV dtype)."""
    from vazao.physics.deployment import make_deployment

    s = c.shape
    try:
        return make_deployment(s.model, s.gpu, s.fmt, c.kv_format, count=s.gpus_per_replica, tp=s.tp, pp=s.pp,
                               engine=key)
    except VazaoError as exc:
        raise VazaoError(f"the same deployment on {key}: {exc}; plan on {key} to search what it runs") from None


def command_for(c: Candidate, lengths: Lengths, engine: str | None = None) -> EngineCommand:
    """The launch command of `c` for its own engine, or for `engine` (see spec_on)."""
    import dataclasses

    spec, note = spec_on(c, lengths, engine)
    cmd = launch_command(engine or c.shape.engine, spec)
    return dataclasses.replace(cmd, notes=(*cmd.notes, note)) if note else cmd


def planned_bench(result, url: str = "http://127.0.0.1:8000/v1") -> str:
    """The `vazao bench` command that checks the winner at the load it was planned for: the offered
    traffic, or (throughput objective) the capacity the plan found, under the plan's SLO."""
    from vazao.plan.commands import bench_command

    t, w = result.inputs.traffic, result.winner
    rate, concurrency = t.rate, t.concurrency
    if result.inputs.objective == "throughput" and w is not None and w.capacity_req_s:
        rate, concurrency = w.capacity_req_s, None
    return bench_command(url, result.inputs.workload, dict(result.inputs.slo.limits), rate=rate,
                         concurrency=concurrency)


@dataclass(frozen=True)
class Instance:
    """One server of a disaggregated deployment: its role, port, GPUs on its host and command."""

    role: str  # prefill | decode
    index: int  # 0-based within the role
    port: int
    handshake_port: int | None
    command: EngineCommand


@dataclass(frozen=True)
class DisaggLaunch:
    """A disaggregated deployment as users run it on one host: P prefill and D decode servers on consecutive
    ports after the endpoint's, each prefill with its own KV bootstrap port, and the router on the endpoint."""

    instances: tuple[Instance, ...]
    router: EngineCommand

    @property
    def engine(self) -> str:
        return self.instances[0].command.engine

    @property
    def shell(self) -> str:
        """Every server, then the router: one line each (what serve.sh runs)."""
        return "\n".join([*(i.command.shell for i in self.instances), self.router.shell])

    def to_json(self) -> dict:
        return {"engine": self.engine, "shell": self.shell, "router": self.router.to_json(),
                "instances": [{"role": i.role, "index": i.index, "port": i.port, "handshake_port": i.handshake_port,
                               **i.command.to_json()} for i in self.instances]}


BOOTSTRAP_BASE = 8998  # SGLang's default --disaggregation-bootstrap-port; the next prefill servers take the next


def disagg_launch(c: Candidate, lengths: Lengths, engine: str | None = None, port: int = 8000,
                  host: str = "127.0.0.1") -> DisaggLaunch:
    """The servers and router of a disaggregated candidate (c.disagg = (prefill, decode)), every command checked
    against its program's flag data (plan/commands.py refuses engines without a complete launch)."""
    import dataclasses

    from vazao.plan.commands import router_command

    if not c.disagg:
        raise VazaoError(f"{c.shape.label()} is not disaggregated: use command_for")
    spec, note = spec_on(c, lengths, engine)
    eng = engine or c.shape.engine
    p, d = c.disagg
    out = []
    for k in range(p + d):
        role, index = ("prefill", k) if k < p else ("decode", k - p)
        hs = BOOTSTRAP_BASE + index if role == "prefill" else None
        cmd = launch_command(eng, dataclasses.replace(spec, replicas=1, role=role, port=port + 1 + k,
                                                      handshake_port=hs))
        if note:
            cmd = dataclasses.replace(cmd, notes=(*cmd.notes, note))
        out.append(Instance(role, index, port + 1 + k, hs, cmd))
    router = router_command(eng, [(f"http://{host}:{i.port}", i.handshake_port) for i in out if i.role == "prefill"],
                            [f"http://{host}:{i.port}" for i in out if i.role == "decode"], port)
    return DisaggLaunch(tuple(out), router)


def launch_for(c: Candidate, lengths: Lengths, engine: str | None = None) -> EngineCommand | DisaggLaunch:
    """What starts `c`: one command (each replica runs it), or a disaggregated deployment's servers and router."""
    return disagg_launch(c, lengths, engine) if c.disagg else command_for(c, lengths, engine)
