"""The typer application and the shared CLI plumbing: one error line and exit 2 for bad input,
`--json` printing one object on stdout and nothing else."""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any

import typer
from rich.console import Console
from typer.core import TyperGroup

from vazao.errors import VazaoError

# Piped output (make run, CI logs) gets a wide table instead of rich's 80-column default.
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)


class _Group(TyperGroup):
    """Bad input from any command (a VazaoError) becomes one line on stderr and exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except VazaoError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None


app = typer.Typer(
    cls=_Group,
    name="vazao",
    help="What will this model cost and how fast will it be, on this hardware, for this traffic?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _clean(obj: Any) -> Any:
    """JSON-safe: inf/nan become null, tuples lists, dataclasses their to_json()."""
    if isinstance(obj, float):
        return None if (math.isinf(obj) or math.isnan(obj)) else obj
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "to_json"):
        return _clean(obj.to_json())
    return obj


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(_clean(obj), indent=2) + "\n")


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


JSON = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else.")


def parse_float_list(text: str, what: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise VazaoError(f"{what} must be a comma-separated list of numbers, got {text!r}") from None
    if not values or any(not v > 0 for v in values):
        raise VazaoError(f"{what} must be positive numbers, got {text!r}")
    return values


def check_positive(**values) -> None:
    """Each named option, when given, must be > 0 (`--name` in the message)."""
    for name, v in values.items():
        if v is not None and v <= 0:
            raise VazaoError(f"--{name.replace('_', '-')} must be positive, got {v}")


def parse_int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(float(x)) for x in text.split(",") if x.strip()]
    except ValueError:
        raise VazaoError(f"{what} must be a comma-separated list of integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise VazaoError(f"{what} must be positive integers, got {text!r}")
    return values
