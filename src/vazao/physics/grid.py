"""Grid sweeps: the same cost model evaluated for one model shard on many accelerators at once.

The model side (ShardConstants, step_work) is computed once per model × format × tp; the hardware
side (StepConstants, roofline) takes numpy arrays over the accelerators. No formula lives here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from vazao.catalog.arch import ModelArch
from vazao.catalog.formats import Format, KVFormat, support
from vazao.catalog.hardware import Accelerator
from vazao.physics.deployment import Deployment
from vazao.physics.memory import free_bytes_per_gpu, kv_bytes_per_sequence_per_gpu
from vazao.physics.profiles import EngineProfile
from vazao.physics.step import NARROW_DTYPES, BatchShape, ShardConstants, StepConstants, roofline, step_work

NO_NODE = 2**31 - 1  # gpus_per_node standing for "no node boundary": more GPUs than any deployment has


@dataclass(frozen=True)
class GridCell:
    """One model × format × tp over every accelerator of the sweep (arrays indexed like `accelerators`)."""

    model: str
    format: str
    tp: int
    runs: np.ndarray  # bool: format not refused on that accelerator
    fits: np.ndarray  # bool
    max_concurrent_sequences: np.ndarray
    step_time_s: np.ndarray  # shape (len(shapes), len(accelerators))


class AcceleratorArrays:
    """The accelerator fields the cost model reads, as arrays."""

    def __init__(self, accs: Sequence[Accelerator]):
        self.accs = tuple(accs)
        self.memory = np.array([a.memory_bytes for a in accs])
        self.bandwidth = np.array([a.memory_bandwidth_bytes_per_s for a in accs])
        self.link = np.array([a.interconnect_bytes_per_s for a in accs])
        self.host_link = np.array([a.host_link_bytes_per_s for a in accs])
        self.nvlink = np.array([1.0 if a.nvlink else 0.0 for a in accs])
        # The node, as StepConstants.of reads it; an accelerator with none (a measured host) gets no boundary.
        self.gpus_per_node = np.array([a.gpus_per_node or NO_NODE for a in accs])
        self.inter_node = np.array([a.inter_node_bytes_per_s or a.interconnect_bytes_per_s for a in accs])
        self.peak16 = np.array([a.peak_16bit[1] for a in accs])
        self.fp32 = np.array([a.peak("fp32") for a in accs])
        # multiprocessors, 0 where the catalog does not state them (StepConstants: no occupancy limit there)
        self.sm_count = np.array([float(a.sm_count or 0) for a in accs])

    def format_peaks(self, fmt: Format, engine: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(runs, matmul peak, narrow) per accelerator for a format: native dtype peak, else the 16-bit
        path; narrow where the native path is an 8- or 4-bit tensor core."""
        status = [support(fmt, a, engine).status for a in self.accs]
        runs = np.array([s != "unsupported" for s in status])
        peak = np.array([a.peak(fmt.compute_dtype) if s == "native" else a.peak_16bit[1]
                         for a, s in zip(self.accs, status, strict=True)])
        narrow = np.array([s == "native" and fmt.compute_dtype in NARROW_DTYPES for s in status])
        return runs, peak, narrow


def sweep(models: Iterable[ModelArch], accs: Sequence[Accelerator], formats: Iterable[Format],
          tps: Iterable[int], engine: EngineProfile, kv: KVFormat, shapes: Sequence[BatchShape],
          context: int) -> list[GridCell]:
    hw = AcceleratorArrays(accs)
    formats = list(formats)
    eng_name = None if engine.is_ideal else engine.name
    peaks = {f.name: hw.format_peaks(f, eng_name) for f in formats}
    cells = []
    for m in models:
        for f in formats:
            runs, matmul_peak, narrow = peaks[f.name]
            if not runs.any():
                continue
            for tp in tps:
                if tp > 1 and m.num_heads % tp:
                    continue
                dep = Deployment(model=m, weight_format=f, kv_format=kv, accelerator=accs[0], engine=engine,
                                 count=tp, tp=tp)
                shard = ShardConstants.of(dep)
                free = free_bytes_per_gpu(dep, hw.memory)
                c = StepConstants(shard, engine, tp, 1, tp, free, matmul_peak, hw.peak16, hw.fp32, hw.bandwidth,
                                  hw.link, hw.host_link, narrow, hw.gpus_per_node, hw.inter_node, hw.nvlink,
                                  hw.sm_count)
                times = np.stack([roofline(step_work(shard, sh), c)[4] for sh in shapes])
                seqs = np.floor_divide(np.maximum(free, 0.0), kv_bytes_per_sequence_per_gpu(dep, context))
                cells.append(GridCell(m.name, f.name, tp, runs, runs & (seqs >= 1), seqs, times))
    return cells
