"""Start-up: CPU seconds of a few one-shot commands (the least of several runs, the machine being shared)
and the modules `import vazao.cli` spends most on (python -X importtime). Issue 11's goal: `vazao
estimate llama-3.1-8b --gpu h100-sxm` under 0.3 s of CPU; the later speed issue's: under 0.2 s, with the
command modules imported only when their command runs (cli/app.py COMMANDS) and `vazao --help` listing
them all from that table."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "estimate": ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm"],
    "fit": ["fit", "llama-3.1-70b", "--gpu", "h100-sxm", "--count", "8"],
    "help": ["--help"],
}
RUNS = 7


def cpu_s(argv: list[str]) -> float:
    best = None
    for _ in range(RUNS):
        before = os.times()
        subprocess.run([sys.executable, "-m", "vazao", *argv], cwd=ROOT, capture_output=True, check=True)
        after = os.times()
        used = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        best = used if best is None else min(best, used)
    return round(best, 3)


def import_top(n: int = 8) -> list[dict]:
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "import vazao.cli"], cwd=ROOT,
                       capture_output=True, text=True)
    rows = []
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append({"module": m.group(4), "cumulative_ms": int(m.group(2)) / 1000, "depth": len(m.group(3))})
    top = sorted((r for r in rows if r["depth"] <= 3), key=lambda r: -r["cumulative_ms"])[:n]
    return [{"module": r["module"], "cumulative_ms": round(r["cumulative_ms"], 1)} for r in top]


def run() -> dict:
    # byte-compiled first, as an installed package is (this environment sets PYTHONDONTWRITEBYTECODE)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src" / "vazao")], check=True,
                   capture_output=True)
    # before: every command module imported at start-up (aiohttp, the bench client, the simulator), numpy
    # for every command, PyYAML's pure-Python loader — 0.82 s CPU for the estimate (/usr/bin/time, 2026-12-03)
    # before the parsed-catalog cache (catalog/_cache.py) and the lazy config.json schema
    # (catalog/hf_schema.py), 2026-12-03 22:18 on this 2-core machine
    before_cache = {"estimate": 0.42, "fit": 0.4, "help": 0.18}
    # typer 0.29 (a fresh install's newest, 2026-12-04) coerces every option through pydantic; with it and
    # the bench's signal handling (asyncio) imported at start-up: estimate 0.42, fit 0.39, help 0.19
    before_typer_pin = {"estimate": 0.42, "fit": 0.39, "help": 0.19}
    # every command module imported by `import vazao.cli` (before app.COMMANDS), byte-compiled, this bench's
    # way, 2026-12-05 17:55: estimate 0.12, fit 0.12, help 0.09 s CPU; `import vazao.cli` 63 ms (-X importtime,
    # of which the command modules ~3 ms; 90 ms without byte-code, the command modules' ~25 ms then)
    before_lazy = {"estimate": 0.12, "fit": 0.12, "help": 0.09}
    from importlib.metadata import version

    return {"before_issue_11_estimate_cpu_s": 0.82, "before_catalog_cache_cpu_s": before_cache,
            "before_typer_pin_cpu_s": before_typer_pin, "before_lazy_commands_cpu_s": before_lazy,
            "typer": version("typer"),
            "cpu_s": {k: cpu_s(v) for k, v in COMMANDS.items()},
            "goal_estimate_cpu_s": 0.2, "import_vazao_cli_top": import_top()}
