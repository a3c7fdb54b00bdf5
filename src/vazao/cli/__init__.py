"""vazao's command line: parse → call one library function → render. Each command's module is
imported when that command runs or shows its help (app.COMMANDS), not at start-up."""

from __future__ import annotations

import sys

from vazao.cli.app import app, report_error
from vazao.errors import VazaoError

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    except VazaoError as exc:  # raised outside a command (app's own group turns the rest into one line)
        report_error(exc)
        sys.exit(2)
