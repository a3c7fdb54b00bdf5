"""docs/library.md's worked example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "library.md"


def test_the_worked_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), {})  # noqa: S102 (the project's own documentation)
    out = capsys.readouterr().out
    assert "sequences of 8,192 tokens" in out and "plan: " in out and "$" in out
