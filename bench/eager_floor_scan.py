"""Choose TensorRT-LLM's eager floors on the serving file's fitting half, and report the held-out half.

A step with a prompt chunk runs eagerly in TensorRT-LLM's PyTorch executor (1.x): it lasts at least its layers'
kernel launches (EngineProfile.eager_step_layer_s a dense layer, eager_moe_layer_s a MoE layer, docs/accuracy.md).
Each is one number per release entry the serving file has rows for: 1.0 (its own entry: Llama-3.1-8B, Qwen3-32B,
Qwen3-235B on H100), 1.1 (its own entry: DeepSeek-R1/V3 on H200 with the experts split 8 ways) and the base (1.2,
1.3 and the rows that state no release: Llama-3.1-70B, gpt-oss-120b, DeepSeek on H200, gpt-oss and Qwen3 on H100).
Releases before engines.yaml's eager_since_version (0.14, 0.17: the C++ executor) have none. Each candidate is
scored on the rows of bench/serving_fit.py's fitting half (the same crc32 split) with both floors at that value:
a dense model's rows choose the dense floor and a MoE model's rows the MoE floor (DeepSeek's three dense layers
aside, neither depends on the other), per release; an entry without rows of one kind (1.1 has no dense model)
keeps the base's. The candidate with the lowest loss is the one shipped, unless the shipped value's loss is
within KEEP_WITHIN (1%) of it: the loss is the objective every other fitted parameter minimizes
(bench/serving_fit.py, `vazao calibrate`: soft-L1 of log(predicted / measured), each metric weighted alike,
vazao.calibrate.loss_of), smoother than a median, which is flat within 0.2 points from 0.8 to 1.2 ms on release
1.0's rows. Both halves' loss and median |error| are reported.

    python bench/eager_floor_scan.py [--values 0,0.0002,…]   (default: 0 to 2 ms a layer in steps of 0.2 ms,
                                                              then 2.5, 3, 4, 5, 6 and 8 ms)

Writes bench/results/eager_floor_scan.json. About 10 s a candidate on two cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import serving_fit  # noqa: E402  (bench/: the fitting half's split)


def _groups() -> tuple[str, ...]:
    """The release entries of calibration.yaml from the PyTorch executor on (each carries its own floor), then
    the base, which every other 1.x row runs with."""
    from vazao.physics.profiles import get_engine

    eng = get_engine("trtllm")
    own = [e["min_version"] for e in eng.versions if tuple(e["min_version"]) >= eng.eager_since_version]
    return (*(".".join(map(str, v)) for v in own), "base")


GROUPS = _groups()


def _group(row) -> str:
    from vazao.bands import of_release, release_key

    return next((g for g in GROUPS[:-1] if of_release(row.version, release_key(g))), "base")


def _kind(row) -> str:
    from vazao.catalog.models import get_model

    return "moe" if get_model(row.model).is_moe else "dense"


def score(value: float) -> dict:
    """Predict the serving file with every 1.x release's floors at `value` (the shipped profile otherwise)."""
    from vazao.calibrate import _row_weights, loss_of
    from vazao.physics.profiles import EngineProfile
    from vazao.validate.rows import read_rows
    from vazao.validate.run import predict_rows

    orig = EngineProfile.at_version

    def at_version(self, version):
        out = orig(self, version)
        if self.name == "trtllm" and not (version and tuple(version) < (1,)):
            out = dataclasses.replace(out, eager_step_layer_s=value, eager_moe_layer_s=value)
        return out

    EngineProfile.at_version = at_version  # the pool's workers fork after this: they see it too
    try:
        rows, _ = read_rows(serving_fit.SERVING)
        rows = [r for r in rows if r.family == "trtllm"]
        res = predict_rows(rows)
    finally:
        EngineProfile.at_version = orig
    # the fitting half as the fits take it (serving_fit.screened: less a campaign's TTFT rows that grow with the
    # output length by one completion interval); the held-out half whole
    # (predict_rows returns its results in the rows' order, each with a copy of its row from the workers)
    fitting = {id(r) for r in serving_fit.screened([r for r in rows if not serving_fit.held_out(r)])}
    kept = [res_i for row, res_i in zip(rows, res, strict=True) if serving_fit.held_out(row) or id(row) in fitting]
    out: dict = {}
    for half, held in (("fitting", False), ("held_out", True)):
        for group in GROUPS:
            for kind in ("dense", "moe"):
                sel = [r for r in kept if serving_fit.held_out(r.row) == held and _group(r.row) == group
                       and _kind(r.row) == kind]
                if not sel:
                    continue
                loss = loss_of(sel, _row_weights([r.row for r in sel]))
                ape = statistics.median(r.ape for r in sel if r.ape is not None)
                out[f"{half} {group} {kind}"] = {"rows": len(sel), "loss": round(loss, 5),
                                                 "median_ape": round(ape, 4)}
    return out


# A candidate replaces the shipped value only where it lowers the fitting half's loss by more than this share:
# release 1.0's dense rows score 0.2751 at 1.2 ms against 0.2764 at the shipped 1.0 ms (0.5%) and the held-out
# half the other way round (0.3277 against 0.3248); a floor does not move for what the split's noise can give
KEEP_WITHIN = 0.01
PARAMS = {"dense": "eager_step_layer_s", "moe": "eager_moe_layer_s"}


def _choose(table: dict, values: list[float]) -> dict[str, tuple[float, float]]:
    """{'<group> <parameter>': (chosen, shipped)} for every release entry with rows of that kind."""
    from vazao.bands import release_key
    from vazao.physics.profiles import get_engine

    eng = get_engine("trtllm")
    out = {}
    for g in GROUPS:
        shipped_profile = eng.at_version(None if g == "base" else release_key(g))
        for kind, param in PARAMS.items():
            key = f"fitting {g} {kind}"
            if key not in table[values[0]]:
                continue
            loss = {v: table[v][key]["loss"] for v in values}
            best = min(values, key=loss.__getitem__)
            shipped = getattr(shipped_profile, param)
            if shipped in loss and loss[best] > (1 - KEEP_WITHIN) * loss[shipped]:
                best = shipped
            out[f"{g} {param}"] = (best, shipped)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--values", default=",".join([f"{i * 0.0002:.4f}" for i in range(11)]
                                                 + ["0.0025", "0.003", "0.004", "0.005", "0.006", "0.008"]),
                    help="candidate seconds per layer, comma-separated")
    args = ap.parse_args()
    values = [float(v) for v in args.values.split(",")]
    t0 = time.perf_counter()
    table = {}
    for v in values:
        table[v] = score(v)
        print(v, json.dumps(table[v]), flush=True)
    best = _choose(table, values)
    doc = {"name": "eager_floor_scan", "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "result": {"candidates_s_per_layer": values, "by_value": {str(v): table[v] for v in values},
                      "shipped_before": {k: v for k, (_, v) in best.items()},
                      "chosen_on_fitting_half": {k: v for k, (v, _) in best.items()},
                      "keep_within_loss": KEEP_WITHIN, "wall_s": round(time.perf_counter() - t0, 1)}}
    path = HERE / "results" / "eager_floor_scan.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print("chosen on the fitting half:", best, "→", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
