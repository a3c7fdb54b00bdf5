"""The event loop a bench run uses: uvloop when it is installed (``pip install 'vazao[fast]'``), else
asyncio's own. uvloop runs the same client code with its loop and socket plumbing in C, which cuts
the client's CPU per streamed chunk by up to a quarter; the run's meta and JSON say which loop ran.

``VAZAO_LOOP=asyncio`` (or ``uvloop``) forces one."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["loop_name", "run"]

T = TypeVar("T")


def _uvloop():
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop


def run(main: Coroutine[Any, Any, T], *, loop: str | None = None) -> T:
    """asyncio.run(main) on uvloop when available (or as `loop` / $VAZAO_LOOP asks: auto, asyncio,
    uvloop)."""
    choice = (loop or os.environ.get("VAZAO_LOOP") or "auto").lower()
    if choice not in ("auto", "asyncio", "uvloop"):
        main.close()
        raise ValueError(f"VAZAO_LOOP must be auto, asyncio or uvloop, got {choice!r}")
    uv = _uvloop() if choice != "asyncio" else None
    if uv is None:
        if choice == "uvloop":
            main.close()
            raise RuntimeError("VAZAO_LOOP=uvloop but uvloop is not installed: pip install 'vazao[fast]'")
        return asyncio.run(main)
    return uv.run(main)


def loop_name() -> str:
    """'uvloop' or 'asyncio': the loop running the caller."""
    mod = type(asyncio.get_running_loop()).__module__
    return "uvloop" if mod.startswith("uvloop") else "asyncio"
