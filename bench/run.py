"""make bench: run every bench/*_bench.py and bench/bench_*.py module's run() and write
bench/results/<name>.json with the machine and a timestamp. Performance claims live here,
not in unit tests; compare ratios measured in one run (the machine is shared and noisy)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOOP_N = 5_000_000


def _cpu() -> dict:
    """Which CPU ran the bench, and how fast it runs plain Python (the simulator's own speed): the build
    machines change between sessions (2026-12-07: a Zen 3 host ran `validate` in 107 s where a Zen 5 host had
    run it in 36 s), so a wall time is read beside the loop time of the same run."""
    import time

    from vazao.catalog.local import cpuinfo, host_generation

    info = {k: v for k, v in cpuinfo().items() if k in ("vendor_id", "cpu family", "model", "model name")}
    t0 = time.perf_counter()
    s = 0
    for i in range(LOOP_N):
        s += i
    return {**info, "generation": host_generation(), "python_loop_s": round(time.perf_counter() - t0, 3),
            "python_loop_n": LOOP_N}


def main(argv: list[str]) -> int:
    only = set(argv)
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    mods = sorted({*HERE.glob("*_bench.py"), *HERE.glob("bench_*.py")})
    for path in mods:
        name = path.stem.removesuffix("_bench").removeprefix("bench_")
        if only and name not in only:
            continue
        spec = importlib.util.spec_from_file_location(f"vazao_bench_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        print(f"[bench] {name} …", flush=True)
        result = mod.run()
        record = {
            "name": name,
            "when": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                        "platform": platform.platform(), "cpu": _cpu()},
            "result": result,
        }
        (out_dir / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
        print(json.dumps(result, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
