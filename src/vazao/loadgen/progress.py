"""A live progress bar on stderr: completed requests, errors, output tokens/s over the last few
seconds, and p95 TTFT so far. Refreshed by the run's own loop a few times a second (no thread),
so its cost stays out of the way of the streams."""

from __future__ import annotations

import collections
import time

import numpy as np
import rich.progress as rp
from rich.console import Console

__all__ = ["LiveProgress"]

WINDOW_S = 5.0


class LiveProgress:
    def __init__(self, enabled: bool = True, console: Console | None = None):
        self.enabled = enabled
        self._console = console or Console(stderr=True)
        self._progress: rp.Progress | None = None
        self._task = None
        self._done: collections.deque = collections.deque()  # (time, output tokens)
        self._ttfts: list[float] = []
        self.completed = 0
        self.errors = 0

    def start(self, label: str, total: int | None) -> None:
        self._done.clear()
        self._ttfts = []
        self.completed = self.errors = 0
        if not self.enabled:
            return
        if self._progress is None:
            self._progress = rp.Progress(
                rp.TextColumn("[bold]{task.description}"), rp.BarColumn(bar_width=24), rp.MofNCompleteColumn(),
                rp.TextColumn("{task.fields[stats]}"), rp.TimeElapsedColumn(), rp.TextColumn("ETA"),
                rp.TimeRemainingColumn(),
                console=self._console, auto_refresh=False, transient=False)
            self._progress.start()
        self._task = self._progress.add_task(label, total=total, stats="")

    def add(self, ok: bool, output_tokens: int, ttft_s: float | None) -> None:
        self.completed += 1
        if not ok:
            self.errors += 1
            return
        self._done.append((time.perf_counter(), output_tokens))
        if ttft_s is not None:
            self._ttfts.append(ttft_s)

    def stats_text(self) -> str:
        now = time.perf_counter()
        while self._done and now - self._done[0][0] > WINDOW_S:
            self._done.popleft()
        span = min(WINDOW_S, now - self._done[0][0]) if self._done else 0.0
        tok_s = sum(n for _, n in self._done) / span if span > 0.2 else 0.0
        p95 = f"{np.percentile(self._ttfts[-2000:], 95) * 1e3:.0f} ms" if self._ttfts else "-"
        return f"err {self.errors}  {tok_s:,.0f} tok/s  TTFT p95 {p95}"

    def refresh(self) -> None:
        if self._progress is None or self._task is None:
            return
        self._progress.update(self._task, completed=self.completed, stats=self.stats_text())
        self._progress.refresh()

    def finish(self) -> None:
        self.refresh()
        self._task = None

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
