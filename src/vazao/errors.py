"""Errors a user can cause. The CLI turns each into one line on stderr and exit code 2."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class VazaoError(Exception):
    """Bad input from a user: printed as one line, never a traceback.

    `parameter` names the library argument at fault when the message begins with it ("count must be a
    whole number"); the CLI then says the flag that set it instead ("--count must be …",
    cli/app.error_text), so library messages speak in library words."""

    def __init__(self, *args: object, parameter: str | None = None):
        super().__init__(*args)
        self.parameter = parameter


class NotFoundError(VazaoError, LookupError):
    """A catalog look-up that matched nothing; carries the closest names."""

    def __init__(self, kind: str, name: str, candidates: Iterable[str]):
        self.kind = kind
        self.name = name
        self.suggestions = closest(name, candidates)
        hint = f"; closest: {', '.join(self.suggestions)}" if self.suggestions else ""
        super().__init__(f"unknown {kind} {name!r}{hint}")


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    pool = sorted(set(candidates))
    key = name.lower()
    hits = difflib.get_close_matches(key, pool, n=n, cutoff=0.4)
    if not hits:
        hits = [c for c in pool if key in c or c in key][:n]
    return hits
