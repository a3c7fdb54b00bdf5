"""vazao's command line: parse → call one library function → render."""

from __future__ import annotations

import sys

from vazao.cli import (  # noqa: F401  (importing each module registers its commands)
    accuracy,
    bench,
    catalog_cmds,
    cost,
    physics_cmds,
    plan,
    report,
    simulate,
)
from vazao.cli.app import app, report_error
from vazao.errors import VazaoError


def main() -> None:
    try:
        app()
    except VazaoError as exc:  # raised outside a command (app's own group turns the rest into one line)
        report_error(exc)
        sys.exit(2)
