"""`--gpu local`: this host as an accelerator, with its bandwidth and FP32 peak measured on the spot.

What a measured run on this machine (a llama.cpp server on its CPU, say) is compared against. The
probe times a large array copy (memory bandwidth) and a matrix product (FP32 FLOP/s) with numpy,
best of several tries, about a second in all; the figures carry 'measured' as their source."""

from __future__ import annotations

import datetime as dt
import os
import time
from functools import cache
from types import MappingProxyType

from vazao.catalog.hardware import LOCAL_NAMES, Accelerator, generations, get_accelerator

COPY_BYTES = 256 * 2**20
MATMUL_N = 1024


def _best(fn, tries: int) -> float:
    best = float("inf")
    for _ in range(tries):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


# Best of this many: on a shared host whose speed moves from one second to the next (a Zen 3 build host,
# 2026-12-07: the one-thread FP32 probe read 57-91 GFLOP/s within minutes, best of 3), a few tries can all land in
# a slow moment while the run they are compared with did not.
COPY_TRIES = 8
MATMUL_TRIES = 10


def measure_bandwidth(nbytes: int = COPY_BYTES, tries: int = COPY_TRIES) -> float:
    import numpy as np

    """Bytes/s of a copy: each copy reads and writes `nbytes`."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # fault the pages in before timing
    return 2 * nbytes / _best(lambda: np.copyto(dst, src), tries)


def measure_fp32_flops(n: int = MATMUL_N, tries: int = MATMUL_TRIES) -> float:
    import numpy as np

    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    b = a.T.copy()
    a @ b
    return 2.0 * n**3 / _best(lambda: a @ b, tries)


VENDORS = {"AuthenticAMD": "cpu-amd", "GenuineIntel": "cpu-intel"}


def cpuinfo() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo (vendor_id, cpu family, model, flags, ...); empty where
    there is none (not Linux)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                if not sep:
                    if fields:  # the blank line after the first processor
                        break
                    continue
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def host_generation() -> str:
    """The host CPU's generation by its vendor (/proc/cpuinfo's vendor_id): llama.cpp's quantized dot
    products reach a different share of the FP32 probe on each (engines.yaml, measured on both), so the
    llama.cpp profile keeps one set of values per vendor; cpu-generic where the vendor is unknown. AMD's Zen 5
    (full-width AVX-512, told from Zen 4 by its avx512_vp2intersect flag) decodes a quantized model faster for
    its FP32 probe than Zen 4 did (engines.yaml): a generation of its own. An AMD CPU without AVX-512 (Zen 3 and
    earlier, no avx512f flag) reaches a smaller share of its probe than Zen 4 (engines.yaml): one more."""
    info = cpuinfo()
    flags = info.get("flags", "").split()
    gen = VENDORS.get(info.get("vendor_id", ""), "cpu-generic")
    if gen == "cpu-amd" and "avx512_vp2intersect" in flags:
        return "cpu-amd-zen5"
    if gen == "cpu-amd" and "avx512f" not in flags:
        return "cpu-amd-avx2"
    return gen


@cache
def local_accelerator() -> Accelerator:
    """This host, probed once per process."""
    bw = measure_bandwidth()
    flops = measure_fp32_flops()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    gen = host_generation()
    today = dt.date.today().isoformat()
    return Accelerator(
        id="local",
        name=f"this host ({os.cpu_count()} CPUs)",
        vendor="host",
        kind="cpu",
        generation=gen,
        compute_capability=None,
        memory_bytes=float(mem),
        memory_bandwidth_bytes_per_s=bw,
        peak_flops=MappingProxyType({"fp32": flops}),
        interconnect="none",
        interconnect_bytes_per_s=bw,
        host_link_bytes_per_s=bw,  # memory is the host's own
        usd_per_hour=None,
        source=f"measured by vazao on this host: numpy copy of {COPY_BYTES >> 20} MiB, "
               f"{MATMUL_N}² FP32 matmul, best of a few",
        as_of=today,
        aliases=("localhost", "host", "cpu"),
        gen=generations()[gen],
    )


def resolve_accelerator(name: str) -> Accelerator:
    """A catalog accelerator by name, or this host measured now for 'local' (cached per process)."""
    from vazao.catalog._load import norm

    if isinstance(name, str) and norm(name) in LOCAL_NAMES:
        return local_accelerator()
    return get_accelerator(name)
