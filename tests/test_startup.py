"""Start-up guards (issue 11: a one-shot command under 0.3 s of CPU): a catalog look-up builds no
pydantic schema; the config.json schema (catalog/hf_schema.py) is built on a config.json's first use."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from vazao.catalog.models import load_model
assert load_model("llama-3.1-8b").arch.num_layers == 32
print("pydantic" in sys.modules, "vazao.catalog.hf_schema" in sys.modules)
"""


def test_a_catalog_look_up_builds_no_config_schema():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_the_schema_is_still_there_for_a_config_json():
    from vazao.catalog.models import from_hf_config

    arch = from_hf_config({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                           "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 512})
    assert "vazao.catalog.hf_schema" in sys.modules and arch.num_layers == 2


CLI_PROBE = """
import contextlib, io, sys
from vazao.cli import main
sys.argv = ["vazao", "estimate", "llama-3.1-8b", "--gpu", "h100-sxm"]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc.code
print(*(m in sys.modules for m in ("pydantic", "asyncio", "aiohttp", "vazao.sim", "vazao.loadgen.client")))
"""


def test_a_one_shot_command_imports_only_what_it_uses():
    """`vazao estimate` loads neither pydantic (typer 0.29 coerces every option through it: twice the CPU,
    hence the pin below 0.29) nor the bench's asyncio signal handling, the HTTP client or the simulator."""
    out = subprocess.run([sys.executable, "-c", CLI_PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"] * 5


LAZY_PROBE = """
import contextlib, io, sys
from vazao.cli import main
sys.argv = ["vazao", *sys.argv[1:]]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc.code
from vazao.cli.app import COMMANDS
print(*sorted({m for m, _, _ in COMMANDS.values()} & set(sys.modules)))
"""


def _cli_modules(*argv: str) -> list[str]:
    return subprocess.run([sys.executable, "-c", LAZY_PROBE, *argv], capture_output=True, text=True,
                          check=True).stdout.split()


def test_commands_load_lazily():
    """`vazao --help` lists every command from a static table and imports none of their modules; a
    command imports its own module only, not the other commands'."""
    assert _cli_modules("--help") == []
    assert _cli_modules("estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--json") == ["vazao.cli.physics_cmds"]
    assert "vazao.cli.accuracy" not in _cli_modules("bill", "--help")
