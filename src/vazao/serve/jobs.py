"""Simulations and plans run as jobs: each in a process of its own (spawned, in its own process group),
so a long one never holds the explorer's interpreter, and cancelling it ends the process and whatever
worker processes it started. The job sends its progress and its result back over a pipe; the server
reads them in a thread and wakes whoever waits (the page's event stream).

What a job runs is the library's one call for it: sim.run.run_simulation and plan.run_plan, with the
report the page draws (report.reports, report.plan_report) built in the job's process too."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.serve import api

TERMINAL = ("done", "error", "cancelled")
PROGRESS_EVERY_S = 0.1  # a job reports its progress at most this often


# ---- what a job runs (in its own process) --------------------------------------------------------


def _rates(body: Mapping[str, Any]) -> list[float]:
    raw = body.get("rates", "20")
    if isinstance(raw, (int, float)):
        raw = str(raw)
    if not isinstance(raw, str):
        raise VazaoError("rates: a comma-separated list of requests/s, e.g. 5,10,20")
    rates = [float(r) for r in inputs.number_list(raw, "rates", maximum=limits.MAX_RATE,
                                                  max_items=limits.MAX_VARIANTS)]
    return rates


def _no_files(data: Any, where: str) -> None:
    """An uploaded workload may not name files: the server would read them from its own disk."""
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if "file" in node:
                raise VazaoError(f"{where}: names a file ({str(node['file'])[:60]!r}); an uploaded workload "
                                 "holds its lengths and timestamps inline")
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def workload_of(body: Mapping[str, Any], *, rate: float | None = None) -> Any:
    """The built-in workload named, or the uploaded YAML (inline only), with the page's overrides."""
    from vazao.workload import load_workload, workload_from_dict

    requests = api.integer(body, "requests", None, maximum=limits.MAX_SIM_REQUESTS)
    seed = api.integer(body, "seed", None, minimum=0, maximum=limits.SEED_LIMIT - 1)
    yaml_text = api.text(body, "workload_yaml", max_len=limits.MAX_WORKLOAD_BYTES)
    if yaml_text:
        data = inputs.loads_yaml(yaml_text, "uploaded workload")
        _no_files(data, "uploaded workload")
        w = workload_from_dict(data or {}, name="uploaded", where="uploaded workload")
        return w.with_overrides(requests=requests, rate=rate, seed=seed)
    name = api.text(body, "workload", "chat") or "chat"
    from vazao.workload.load import builtin_workloads

    if name not in builtin_workloads():
        raise VazaoError(f"workload {name[:60]!r}: one of {', '.join(builtin_workloads())} (or upload a YAML)")
    return load_workload(name, requests=requests, rate=rate, seed=seed)


def check_simulate(body: Mapping[str, Any]) -> None:
    """Everything a simulation reads, checked before its process starts: a mistake is a 400 at once."""
    from vazao.results import SLO

    q = api.ExploreQuery.read(body)
    dep = q.deployment()
    if dep.support.status == "unsupported":
        raise VazaoError(f"{dep.weight_format.name} on {dep.accelerator.name}: {dep.support.reason}")
    rates = _rates(body)
    workload_of(body, rate=rates[0])
    slo = api.text(body, "slo")
    if slo:
        SLO.parse(slo)


def run_simulate(body: Mapping[str, Any], progress: Callable[[int, int], None]) -> dict[str, Any]:
    from vazao.report.reports import simulation_report
    from vazao.resultfiles import json_document
    from vazao.results import SLO
    from vazao.sim import run_simulation

    dep = api.ExploreQuery.read(body).deployment()
    rates = _rates(body)
    slo_text = api.text(body, "slo")
    slo = SLO.parse(slo_text) if slo_text else None
    w = workload_of(body, rate=rates[0] if len(rates) == 1 else None)
    run = run_simulation(dep, w, None, slo, rates=rates if len(rates) > 1 else (), progress=progress)
    doc = json_document(run)
    return {"document": doc, "view": api.report_view(simulation_report(doc))}


def _plan_inputs(body: Mapping[str, Any], workload: str) -> Any:
    from vazao.plan import DEFAULT_SLO, PlanInputs, Traffic
    from vazao.results import SLO

    def names(key: str, default: str | None) -> tuple[str, ...]:
        v = api.text(body, key, default, max_len=4096)
        return tuple(inputs.split_list(v, key, max_items=16)) if v else ()

    slo = api.text(body, "slo")
    return PlanInputs(workload=workload, traffic=Traffic.parse(api.text(body, "traffic", "20/s") or "20/s"),
                      slo=SLO.parse(slo or DEFAULT_SLO), models=names("models", "llama-3.1-70b"),
                      gpus=names("gpus", "h100-sxm"), formats=names("formats", "bf16"),
                      engines=names("engines", None), max_gpus=api.integer(body, "max_gpus", 8, maximum=64) or 8,
                      requests=api.integer(body, "requests", 400, maximum=limits.MAX_SIM_REQUESTS) or 400,
                      simulate_top=api.integer(body, "simulate_top", 12, maximum=256) or 12,
                      seed=api.integer(body, "seed", None, minimum=0, maximum=limits.SEED_LIMIT - 1),
                      slo_is_default=not slo, curves=api.integer(body, "curves", 3, minimum=0, maximum=8) or 0)


def check_plan(body: Mapping[str, Any]) -> None:
    from vazao.catalog.formats import get_format
    from vazao.catalog.local import resolve_accelerator
    from vazao.catalog.models import get_model
    from vazao.catalog.prices import get_price
    from vazao.physics.profiles import get_engine

    inp = _plan_inputs(body, "chat")
    for m in inp.models:
        get_model(m)  # catalog names only: a plan's models are never opened as paths here
    for g in inp.gpus:
        resolve_accelerator(g)
    for f in inp.formats:
        get_format(f)
    for e in inp.engines:
        get_engine(e)
    if api.text(body, "against_api"):
        get_price(api.text(body, "against_api") or "")
    workload_of(body)


def run_plan(body: Mapping[str, Any], progress: Callable[[int, int], None]) -> dict[str, Any]:
    from vazao.plan import run_plan as plan_search
    from vazao.plan.emit import launch_for, planned_bench
    from vazao.plan.output import plan_json
    from vazao.report.plan_report import plan_report
    from vazao.resultfiles import json_document

    with tempfile.TemporaryDirectory(prefix="vazao-serve-") as tmp:
        yaml_text = api.text(body, "workload_yaml", max_len=limits.MAX_WORKLOAD_BYTES)
        if yaml_text:
            workload_of(body)  # checked: inline only
            path = Path(tmp) / "uploaded.yaml"
            path.write_text(yaml_text, encoding="utf-8")
            name = str(path)
        else:
            name = api.text(body, "workload", "chat") or "chat"
        inp = _plan_inputs(body, name)
        inp.check_workload()
        result = plan_search(inp, workers=min(2, os.cpu_count() or 1), progress=progress)
    api_price = api.text(body, "against_api")
    against = None
    if api_price and result.candidates:
        from vazao.plan.api import against_api

        against = against_api(result, api_price).to_json()
    doc = plan_json(result, api=against)
    command = bench = None
    if result.winner is not None:
        try:
            launch = launch_for(result.winner, result.lengths)
            doc["launch"] = launch.to_json()
            command = getattr(launch, "script", launch.shell)  # with the files it reads, written first
        except VazaoError as exc:
            doc["launch_error"] = str(exc)
        bench = planned_bench(result)
        doc["bench_command"] = bench
    doc = json_document(doc)
    view = api.report_view(plan_report(doc)) if result.candidates else None
    return {"document": doc, "view": view, "command": command, "bench_command": bench}


RUNNERS: dict[str, Callable[[Mapping[str, Any], Callable[[int, int], None]], dict[str, Any]]] = {
    "simulation": run_simulate, "plan": run_plan}


def _child(kind: str, body: Mapping[str, Any], conn: Any) -> None:
    """The job's process: its own process group (cancel ends it and its workers), progress at most
    every PROGRESS_EVERY_S, then one ("result", …) or ("error", message)."""
    if hasattr(os, "setpgrp"):
        os.setpgrp()
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_S or done >= total:
            last[0] = now
            conn.send(("progress", int(done), int(total)))

    try:
        conn.send(("result", RUNNERS[kind](body, progress)))
    except VazaoError as exc:
        conn.send(("error", str(exc)))
    except Exception as exc:  # noqa: BLE001 - the page gets one line; the server's log the type
        conn.send(("error", f"the {kind} failed: {type(exc).__name__}"))
    finally:
        conn.close()


# ---- the server's side -----------------------------------------------------------------------------


@dataclass
class Job:
    id: str
    kind: str
    body: Mapping[str, Any]
    state: str = "running"
    done: int = 0
    total: int = 0
    result: dict[str, Any] | None = None
    error: str | None = None
    started: float = field(default_factory=time.time)
    finished: float | None = None
    version: int = 0
    proc: Any = None
    cond: threading.Condition = field(default_factory=threading.Condition)

    def status(self, with_result: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "state": self.state, "done": self.done,
                               "total": self.total, "error": self.error, "version": self.version}
        if with_result and self.result is not None:
            out["result"] = self.result
        return out

    def _update(self, **changes: Any) -> None:
        with self.cond:
            if self.state in TERMINAL and changes.get("state") not in (None, self.state):
                return  # a cancelled job stays cancelled
            for k, v in changes.items():
                setattr(self, k, v)
            if self.state in TERMINAL and self.finished is None:
                self.finished = time.time()
            self.version += 1
            self.cond.notify_all()

    def wait_change(self, version: int, timeout: float) -> None:
        with self.cond:
            self.cond.wait_for(lambda: self.version != version, timeout)


class Jobs:
    """The running and recently finished jobs: at most limits.MAX_SERVE_JOBS running, the last
    limits.MAX_SERVE_KEPT_JOBS finished kept for the page to fetch and export."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._ctx = multiprocessing.get_context("spawn")

    def start(self, kind: str, body: Mapping[str, Any]) -> Job:
        with self._lock:
            running = sum(j.state == "running" for j in self._jobs.values())
            if running >= limits.MAX_SERVE_JOBS:
                raise VazaoError(f"{running} jobs are running; cancel one or wait (at most {limits.MAX_SERVE_JOBS})")
            finished = sorted((j for j in self._jobs.values() if j.state in TERMINAL), key=lambda j: j.started)
            for old in finished[:max(0, len(finished) - limits.MAX_SERVE_KEPT_JOBS + 1)]:
                del self._jobs[old.id]
            job = Job(f"{kind[:3]}{next(self._ids)}-{os.urandom(4).hex()}", kind, dict(body))
            self._jobs[job.id] = job
        parent, child = self._ctx.Pipe(duplex=False)
        proc = self._ctx.Process(target=_child, args=(kind, job.body, child), daemon=False)
        proc.start()
        child.close()
        job.proc = proc
        threading.Thread(target=self._read, args=(job, parent), daemon=True, name=f"job-{job.id}").start()
        return job

    def _read(self, job: Job, conn: Any) -> None:
        try:
            while True:
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    break
                if msg[0] == "progress":
                    job._update(done=msg[1], total=msg[2])
                elif msg[0] == "result":
                    job._update(state="done", result=msg[1], done=max(job.done, job.total))
                elif msg[0] == "error":
                    job._update(state="error", error=msg[1])
        finally:
            conn.close()
            job.proc.join()
            if job.state == "running":
                job._update(state="error", error=f"the {job.kind} process ended (exit code {job.proc.exitcode})")

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise KeyError(job_id)
        return job

    def latest(self, kind: str) -> Job | None:
        with self._lock:
            done = [j for j in self._jobs.values() if j.kind == kind and j.state == "done"]
        return max(done, key=lambda j: j.finished or 0) if done else None

    def cancel(self, job: Job) -> None:
        if job.state != "running":
            return
        job._update(state="cancelled", error="cancelled")
        _kill(job.proc)

    def close(self) -> None:
        with self._lock:
            jobs = list(self._jobs.values())
        for j in jobs:
            self.cancel(j)


def _kill(proc: Any) -> None:
    """End the job's process group (its plan workers with it); the process alone before it made one."""
    if proc is None or proc.pid is None:
        return
    try:
        if hasattr(os, "killpg") and os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGTERM)
            return
    except (ProcessLookupError, PermissionError):
        pass
    proc.terminate()
