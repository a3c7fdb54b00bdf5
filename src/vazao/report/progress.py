"""A progress bar with ETA on stderr for long library calls (plan, validate, calibrate): the library
reports (done, total) through a callback; this turns it into a bar. Off when stderr is not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(label: str, enabled: bool | None = None) -> Iterator[Callable[[int, int], None] | None]:
    """Yields a callback(done, total), or None when disabled (not a terminal, --json, --quiet)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(TextColumn(f"[bold]{label}"), BarColumn(bar_width=30), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True),
                   transient=True)
    task = None

    def update(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            task = bar.add_task(label, total=total)
        bar.update(task, completed=done, total=total)

    with bar:
        yield update
