"""Progress of long simulations (issue 13: 'progress bars with ETA on every command that can take
more than two seconds'): the library reports (done, total) and the CLI draws it only on a terminal."""

from __future__ import annotations

import dataclasses
import os
import pty
import select
import subprocess
import sys

from vazao.physics.deployment import make_deployment
from vazao.sim import SimConfig, simulate, sweep
from vazao.workload import load_workload

DEP = make_deployment("llama-3.1-8b", "h100-sxm")


def _calls():
    seen: list[tuple[int, int]] = []
    return seen, lambda done, total: seen.append((done, total))


def test_simulate_reports_requests_served_out_of_planned():
    seen, cb = _calls()
    w = load_workload("chat", requests=400, rate=20)
    res = simulate(DEP, w, SimConfig.from_engine(DEP.engine), progress=cb)
    assert len(seen) >= 10 and {t for _, t in seen} == {400}
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] >= 0.9 * res.completed


def test_sweep_counts_every_level_against_one_total():
    seen, cb = _calls()
    w = load_workload("chat", requests=150)
    sweep(DEP, w, SimConfig.from_engine(DEP.engine), rates=[5, 10, 20], progress=cb)
    assert {t for _, t in seen} == {450}
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] > 300  # the third level counts from 300


def test_duration_only_runs_report_simulated_seconds():
    seen, cb = _calls()
    w = dataclasses.replace(load_workload("chat", rate=5, duration_s=60), requests=None)
    simulate(DEP, w, SimConfig.from_engine(DEP.engine), progress=cb)
    assert seen and {t for _, t in seen} == {60} and all(0 <= d <= 60 for d, _ in seen)
    assert seen[-1][0] >= 50


def _on_a_terminal(args: list[str]) -> str:
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "vazao", *args], stdin=child, stdout=child, stderr=child,
                            env={**os.environ, "COLUMNS": "120"})
    os.close(child)
    out = b""
    while True:
        r, _, _ = select.select([main], [], [], 120)
        if not r:
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=120)
    os.close(main)
    return out.decode("utf-8", "replace")


def test_cli_draws_a_bar_with_eta_on_a_terminal_and_none_when_quiet():
    args = ["simulate", "llama-3.1-8b", "-g", "h100-sxm", "--requests", "4000", "--rate", "40"]
    assert "ETA" in _on_a_terminal(args)
    assert "ETA" not in _on_a_terminal([*args, "--quiet"])


def test_bench_bar_shows_eta_of_the_level():
    import io

    from rich.console import Console

    from vazao.loadgen.progress import LiveProgress

    buf = io.StringIO()
    bar = LiveProgress(console=Console(file=buf, force_terminal=True, width=140))
    bar.start("level 1", total=100)
    for _ in range(30):
        bar.add(True, 50, 0.02)
    bar.refresh()
    bar.close()
    text = buf.getvalue()
    assert "30/100" in text and "ETA" in text
