"""A fixed set of commands whose JSON must not change under a refactor (issue 11).

    python bench/snapshot.py write bench/results/snapshot_before.json
    python bench/snapshot.py check bench/results/snapshot_before.json

Every command names an uncalibrated engine profile (vLLM) or the first-guess profile file, so a
change to the shipped calibration does not move these numbers; only a change of behaviour does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from vazao.resultfiles import without_timing

ROOT = Path(__file__).resolve().parent.parent
FIRST = str(ROOT / "bench" / "first_guess_profiles.yaml")
COMMANDS = [
    ["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"],
    ["estimate", "llama-3.1-70b", "--gpu", "h100-sxm", "--count", "4", "--tp", "4", "--format", "fp8", "--json"],
    ["estimate", "llama-3.1-70b", "--gpu", "h100-sxm", "--count", "4", "--tp", "4", "--format", "fp8",
     "--engine", "trtllm", "--profile", FIRST, "--json"],
    ["estimate", "mixtral-8x7b", "--gpu", "a100-sxm-80gb", "--count", "2", "--tp", "2", "--json"],
    ["fit", "llama-3.1-70b", "--gpu", "a100-sxm-80gb", "--json"],
    ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", "chat", "--requests", "300", "--json"],
    ["simulate", "llama-3.1-8b", "--gpu", "l4", "--workload", "rag", "--requests", "200", "--json"],
    ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", "chat", "--requests", "200",
     "--engine", "trtllm", "--profile", FIRST, "--json"],
    ["cost", "selfhost", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", "chat", "--json"],
    ["cost", "selfhost", "llama-3.1-8b", "--gpu", "l4", "--workload", "chat", "--analytic", "--json"],
    ["cost", "breakeven", "llama-3.1-8b", "--price", "gpt-5-mini", "--gpus", "l4,h100-sxm", "--workload", "chat",
     "--json"],
    ["budget", "check", str(ROOT / "examples" / "budget.yaml"), "--simulate", "--model", "llama-3.1-8b", "--gpu",
     "h100-sxm", "--json"],
    ["budget", "check", str(ROOT / "examples" / "budget.yaml"), "--simulate", "--model", "llama-3.1-8b", "--gpu",
     "h100-sxm", "--analytic", "--json"],
]


def run_all() -> dict:
    out = {}
    for cmd in COMMANDS:
        p = subprocess.run([sys.executable, "-m", "vazao", *cmd], capture_output=True, text=True, cwd=ROOT)
        key = " ".join(c if c != FIRST else "FIRST_GUESS" for c in cmd)
        try:
            body = without_timing(json.loads(p.stdout))
        except json.JSONDecodeError:
            body = p.stdout
        out[key] = {"rc": p.returncode, "out": body, "err": p.stderr.strip().splitlines()[-1:] if p.returncode else []}
    return out


def main(argv: list[str]) -> int:
    mode, path = argv[1], Path(argv[2])
    now = run_all()
    if mode == "write":
        path.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        return 0
    before = json.loads(path.read_text())
    bad = [k for k in before if before[k] != now.get(k)]
    for k in bad:
        print("changed:", k)
    print(f"{len(before) - len(bad)} of {len(before)} commands identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
