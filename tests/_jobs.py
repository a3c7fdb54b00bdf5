"""Waiting on a `vazao serve` job's process from a test."""

from __future__ import annotations

import time


def ended(proc, within_s: float = 30.0) -> bool:
    """Whether the job's process has ended within `within_s`, read from its exit code. Not join() then
    is_alive(): the server's reader thread reaps the same process, and a join in a second thread that finds it
    reaped but its exit code not yet stored reads "alive" (os.waitpid's ECHILD, multiprocessing's poll)."""
    deadline = time.monotonic() + within_s
    while proc.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc.exitcode is not None
