"""The client's own CPU: is the load generator, not the server, the bottleneck?

A Python client runs its event loop on one core. When that core is busy most of the time, chunks
wait in the socket before the loop reads them and timestamps come late: the run measures the
client. CpuMonitor samples process CPU time (user + system, all threads) against wall time and
measures event-loop lag (how late a timer fires), and says when either is high.
"""

from __future__ import annotations

import asyncio
import resource
import time
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["CpuMonitor", "CpuReport"]

BUSY_SHARE = 0.8  # of one core: above this the client's loop is saturated
LAG_WARN_S = 0.010  # p99 event-loop lag above this makes timestamps late by as much


def _cpu_s() -> tuple[float, float]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime, ru.ru_stime


@dataclass(frozen=True)
class CpuReport:
    wall_s: float
    user_s: float
    system_s: float
    share_of_core: float  # mean over the run
    peak_share_of_core: float  # the busiest sampling interval
    chunks: int
    us_per_chunk: float | None
    loop_lag_p50_s: float | None
    loop_lag_p99_s: float | None
    loop_lag_max_s: float | None

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.system_s

    def warnings(self) -> list[str]:
        out = []
        if self.share_of_core >= BUSY_SHARE or self.peak_share_of_core >= 0.95:
            out.append(
                f"the client used {self.share_of_core:.0%} of a core (peak {self.peak_share_of_core:.0%}): "
                "the load generator, not the server, may be the bottleneck; lower the load per client "
                "or run the client on another machine")
        if self.loop_lag_p99_s is not None and self.loop_lag_p99_s > LAG_WARN_S:
            out.append(
                f"the client's event loop ran {self.loop_lag_p99_s * 1e3:.1f} ms late at p99 "
                f"(max {self.loop_lag_max_s * 1e3:.1f} ms): timestamps may be late by as much"
                + ("" if self.share_of_core >= BUSY_SHARE else
                   "; the client is not busy itself, so something else (the server?) holds the CPU"))
        return out

    def to_json(self) -> dict:
        d = asdict(self)
        d["cpu_s"] = self.cpu_s
        return d


class CpuMonitor:
    """start() in the running loop, stop() returns the report. Samples every `interval_s`."""

    def __init__(self, interval_s: float = 0.1):
        self.interval_s = interval_s
        self._task: asyncio.Task | None = None
        self._lags: list[float] = []
        self._peak = 0.0
        self.last_share = 0.0

    def start(self) -> None:
        self._wall0 = time.perf_counter()
        self._u0, self._s0 = _cpu_s()
        self._task = asyncio.get_running_loop().create_task(self._sample())

    async def _sample(self) -> None:
        loop = asyncio.get_running_loop()
        window_wall, window_cpu = self._wall0, self._u0 + self._s0
        while True:
            due = loop.time() + self.interval_s
            await asyncio.sleep(self.interval_s)
            self._lags.append(max(0.0, loop.time() - due))
            now = time.perf_counter()
            if now - window_wall >= 1.0:  # CPU share over >= 1 s windows (getrusage ticks are coarse)
                u, s = _cpu_s()
                share = (u + s - window_cpu) / (now - window_wall)
                self.last_share = share
                self._peak = max(self._peak, share)
                window_wall, window_cpu = now, u + s

    def stop(self, chunks: int = 0) -> CpuReport:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        wall = time.perf_counter() - self._wall0
        u, s = _cpu_s()
        user, system = u - self._u0, s - self._s0
        share = (user + system) / wall if wall > 0 else 0.0
        lags = np.asarray(self._lags) if self._lags else None
        return CpuReport(
            wall_s=wall, user_s=user, system_s=system, share_of_core=share,
            peak_share_of_core=max(self._peak, share), chunks=chunks,
            us_per_chunk=(user + system) / chunks * 1e6 if chunks else None,
            loop_lag_p50_s=None if lags is None else float(np.percentile(lags, 50)),
            loop_lag_p99_s=None if lags is None else float(np.percentile(lags, 99)),
            loop_lag_max_s=None if lags is None else float(lags.max()),
        )
