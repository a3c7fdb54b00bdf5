"""vazao's command line: parse → call one library function → render."""

from __future__ import annotations

import sys

from vazao.cli import bench, catalog_cmds, cost, physics_cmds, simulate  # noqa: F401  (register commands)
from vazao.cli.app import app, err_console
from vazao.errors import VazaoError


def main() -> None:
    try:
        app()
    except VazaoError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
