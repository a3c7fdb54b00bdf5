"""vazao's step costs against prefill and decode timed on a GPU by bench/gpu/torch_llama_timing.py.

    python bench/gpu/compare.py bench/results/gpu/h200_llama_torch_run1.json [more runs ...]

For every timed row (model, path, prefill or decode, batch, tokens) it computes, with the library's
one cost model (`vazao.step_cost` on the row's BatchShape):

- the physical floor (the vLLM profile idealized: efficiencies 1, no overheads) at the catalog's peaks, with
  PyTorch's decode attention (one thread block per sequence and KV head: EngineProfile.split_kv false);
- the shipped profile meant for that path: `naive` (transformers' generate loop, eager) for hf_eager,
  `vllm` (CUDA graphs, continuous batching) for graph;
- a fit of three global numbers per path (compute efficiency, memory efficiency, per-step overhead) over
  all of that path's rows: how much of the spread the roofline's shape explains once three numbers are
  set. Rows of several runs are pooled as medians.

Writes bench/results/gpu/h200_llama_torch.json. A test of nothing: a record of one lent machine."""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

import vazao

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "results" / "gpu" / "h200_llama_torch.json"
SHIPPED = {"hf_eager": "naive", "graph": "vllm", "graph_mm": "vllm"}


def shape_of(row: dict) -> vazao.BatchShape:
    if row["phase"] == "prefill":
        return vazao.BatchShape.prefill(row["batch"], row["prompt_tokens"])
    return vazao.BatchShape.decode(row["batch"], row["context_tokens"])


def pooled(runs: list[dict]) -> list[dict]:
    """One row per (model, path, phase, batch, tokens): the median of the runs' medians, with their spread."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for run in runs:
        for r in run["rows"]:
            tokens = r.get("prompt_tokens", r.get("context_tokens"))
            groups[(r["model"], r["path"], r["phase"], r["batch"], tokens)].append(r)
    out = []
    for rows in groups.values():
        times = [r["time_s"] for r in rows]
        out.append({**rows[0], "time_s": statistics.median(times), "runs": len(times),
                    "run_spread": max(times) / min(times) - 1.0})
    return out


def fit(compute_s: np.ndarray, memory_s: np.ndarray, measured: np.ndarray) -> dict:
    """compute efficiency, memory efficiency and step overhead minimising the squared log errors of
    max(compute_s / ce, memory_s / me) + overhead, on a grid (0.02 in each efficiency, 25 µs)."""
    ce = np.arange(0.2, 1.0001, 0.02)[:, None, None, None]
    me = np.arange(0.2, 1.0001, 0.02)[None, :, None, None]
    ov = np.arange(0.0, 0.12, 25e-6)[None, None, :, None]
    best = None
    for i in range(0, ov.shape[2], 400):  # in slices: the whole grid at once is ~1 GB
        o = ov[:, :, i:i + 400]
        pred = np.maximum(compute_s / ce, memory_s / me) + o
        loss = (np.log(pred / measured) ** 2).sum(axis=-1)
        k = np.unravel_index(np.argmin(loss), loss.shape)
        if best is None or loss[k] < best[0]:
            best = (loss[k], float(ce[k[0], 0, 0, 0]), float(me[0, k[1], 0, 0]), float(o[0, 0, k[2], 0]))
    _, c, m, o = best
    pred = np.maximum(compute_s / c, memory_s / m) + o
    err = np.abs(pred / measured - 1.0)
    return {"compute_efficiency": round(c, 2), "memory_efficiency": round(m, 2), "step_overhead_s": o,
            "median_abs_error": float(np.median(err)), "max_abs_error": float(err.max()),
            "predicted_s": pred.tolist()}


def main(paths: list[str]) -> int:
    runs = [json.loads(Path(p).read_text()) for p in paths]
    rows = pooled(runs)
    deps: dict[tuple, vazao.Deployment] = {}

    def dep(model: str, engine: str):
        if (model, engine) not in deps:
            # the floor of these paths: the physical limit, but PyTorch's attention, one thread block per sequence
            # and KV head in decode (no split-KV: EngineProfile.split_kv), so a few sequences leave SMs idle
            prof = (replace(vazao.get_engine("vllm").idealized(), split_kv=False) if engine == "floor"
                    else vazao.get_engine(engine))
            deps[model, engine] = vazao.deployment_for(model, "h200", "bf16", engine=prof)
        return deps[model, engine]

    for r in rows:
        shape = shape_of(r)
        floor = vazao.step_cost(dep(r["model"], "floor"), shape)
        shipped = vazao.step_cost(dep(r["model"], SHIPPED[r["path"]]), shape)
        r.update(floor_s=floor.time_s, floor_compute_s=floor.compute_s, floor_memory_s=floor.memory_s,
                 floor_bound=floor.bound, shipped_profile=SHIPPED[r["path"]], shipped_s=shipped.time_s,
                 shipped_error=shipped.time_s / r["time_s"] - 1.0, of_floor=floor.time_s / r["time_s"])
    fits = {}
    for path in SHIPPED:
        mine = [r for r in rows if r["path"] == path]
        if not mine:
            continue
        f = fit(np.array([r["floor_compute_s"] for r in mine]), np.array([r["floor_memory_s"] for r in mine]),
                np.array([r["time_s"] for r in mine]))
        for r, p in zip(mine, f.pop("predicted_s"), strict=True):
            r["fitted_s"] = p
        errs = [abs(r["shipped_error"]) for r in mine]
        fits[path] = {"rows": len(mine), "shipped_profile": SHIPPED[path],
                      "shipped_median_abs_error": statistics.median(errs), "shipped_max_abs_error": max(errs), **f}
    doc = {"what": "vazao step_cost against random-weight Llama prefill/decode timed with PyTorch on a lent GPU",
           "runs": [{"file": str(Path(p).name), "device": r["device"], "torch": r["torch"],
                     "transformers": r["transformers"], "ceilings": r["ceilings"], "checks": r["checks"]}
                    for p, r in zip(paths, runs, strict=True)],
           "fits": fits, "rows": rows}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")

    for run in runs:
        c = run["ceilings"]
        print(f"ceilings: bf16 matmul {c['matmul_bf16_flop_per_s'] / 1e12:.0f} TFLOP/s, "
              f"copy {c['copy_bytes_per_s'] / 1e12:.2f} TB/s (catalog: 989 TFLOP/s, 4.80 TB/s)")
    print(f"{'model':13} {'path':8} {'phase':7} {'b':>4} {'tokens':>6} {'measured':>9} {'floor':>8} "
          f"{'of floor':>8} {'shipped':>8} {'err':>6} {'fitted':>8} {'err':>6}")
    for r in sorted(rows, key=lambda r: (r["path"], r["model"], r["phase"], r["batch"],
                                         r.get("prompt_tokens", r.get("context_tokens")))):
        tokens = r.get("prompt_tokens", r.get("context_tokens"))
        print(f"{r['model']:13} {r['path']:8} {r['phase']:7} {r['batch']:>4} {tokens:>6} "
              f"{r['time_s'] * 1e3:8.2f}m {r['floor_s'] * 1e3:7.2f}m {r['of_floor']:8.0%} "
              f"{r['shipped_s'] * 1e3:7.2f}m {r['shipped_error']:+6.0%} "
              f"{r['fitted_s'] * 1e3:7.2f}m {r['fitted_s'] / r['time_s'] - 1:+6.0%}")
    for path, f in fits.items():
        print(f"{path}: {f['rows']} rows; shipped '{f['shipped_profile']}' median |err| "
              f"{f['shipped_median_abs_error']:.0%} (max {f['shipped_max_abs_error']:.0%}); fitted ce "
              f"{f['compute_efficiency']:.2f} me {f['memory_efficiency']:.2f} "
              f"overhead {f['step_overhead_s'] * 1e3:.2f} ms: "
              f"median |err| {f['median_abs_error']:.1%} (max {f['max_abs_error']:.0%})")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    runs = sorted(str(p) for p in (ROOT / "bench" / "results" / "gpu").glob("h200_llama_torch_run*.json"))
    sys.exit(main(sys.argv[1:] or runs))
