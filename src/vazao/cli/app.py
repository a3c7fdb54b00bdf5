"""The typer application and the shared CLI plumbing: one error line and exit 2 for bad input,
`--json` printing one object on stdout and nothing else (an error too: {"error": "..."})."""

from __future__ import annotations

import csv
import importlib
import io
import json
import os
import re
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any

import typer
import typer._click as _click  # typer vendors its own click: its exceptions are these, not click's
import typer._click.globals  # noqa: F401  (get_current_context: error_text inside a command)
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from vazao import limits
from vazao.errors import VazaoError
from vazao.inputs import OutputExists, number, number_list
from vazao.resultfiles import json_document

# Set per invocation by _Group.main: whether `--json` or `--csv` was asked for, whether a result
# object is already on stdout (then an error goes to stderr only, so stdout stays one JSON object),
# and how many tables went out as CSV.
_state = {"json": False, "emitted": False, "csv": False, "tables": 0}


def _cell_text(cell: Any) -> str:
    """Plain text on one line: a header wrapped for the terminal ("tok/s\\n@b1") reads "tok/s @b1"."""
    if isinstance(cell, Text):
        text = cell.plain
    else:
        text = Text.from_markup(cell).plain if isinstance(cell, str) else str(cell)
    return " ".join(text.split())


def table_csv(table: Table) -> str:
    """A rich table as CSV: its headers and cells as plain text (markup and styles dropped)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = table.columns
    w.writerow([_cell_text(c.header) for c in cols])
    for row in zip(*[list(c.cells) for c in cols], strict=True):
        w.writerow([_cell_text(v) for v in row])
    return buf.getvalue()


class _Console(Console):
    """Under `--csv` every table a command prints goes to stdout as CSV (a blank line between two),
    and its other lines are dropped: one renderer, two formats, nothing to keep in step per command."""

    def print(self, *objects: Any, **kw: Any) -> None:
        if not _state["csv"] or self.stderr:
            return super().print(*objects, **kw)
        for obj in objects:
            self._csv(obj)

    def _csv(self, obj: Any) -> None:
        if isinstance(obj, Table):
            sys.stdout.write(("\n" if _state["tables"] else "") + table_csv(obj))
            sys.stdout.flush()
            _state["tables"] += 1
        elif isinstance(obj, Group):
            for part in obj.renderables:
                self._csv(part)


# Piped output (make run, CI logs) gets a wide table instead of rich's 80-column default.
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160
console = _Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)


def _one_line(message: object) -> str:
    return " ".join(str(message).split()) or "failed"


def report_error(message: object) -> None:
    """The one way an error reaches the user: `error: <message>` on one line of stderr and, under
    --json, {"error": "<message>"} on stdout."""
    text = _one_line(message)
    if _state["json"] and not _state["emitted"]:
        sys.stdout.write(json.dumps({"error": text}) + "\n")
        sys.stdout.flush()
        _state["emitted"] = True
    err_console.print(Text.assemble(("error:", "bold red"), " ", text), highlight=False, soft_wrap=True)


def _usage_message(exc: Exception) -> str:
    """click's message, with the value that failed to parse (typer keeps it on the cause)."""
    text = exc.format_message()
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if isinstance(exc, _click.exceptions.BadParameter) and callable(errors):
        try:
            value = errors()[0].get("input")
        except (IndexError, AttributeError, TypeError):
            value = None
        if isinstance(value, str):
            text += f" (got {value[:60]!r})"
    return text


def _head(args: list[str]) -> list[str]:
    return args[: args.index("--")] if "--" in args else args


def _wants_json(args: list[str]) -> bool:
    return "--json" in _head(args)


def _take_csv(args: list[str]) -> tuple[list[str], bool]:
    """`--csv` anywhere before `--` is vazao's, not the command's: every command's tables obey it."""
    head = _head(args)
    if "--csv" not in head:
        return args, False
    return [a for a in head if a != "--csv"] + args[len(head):], True


# Failures only a user's input causes (a file that is not UTF-8, nests too deep, fills the disk, a
# number too large): never a traceback. Anything else is a bug and keeps its traceback (exit 1).
USER_FAULTS = (OSError, UnicodeError, RecursionError, MemoryError, OverflowError)


_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)(?<!etc)\.(\s|$)")


def _first_sentence(help_text: str | None) -> str:
    para = " ".join((help_text or "").split("\n\n")[0].split())
    m = _SENTENCE_END.search(para)
    return para[: m.start()] if m else para


class HelpGroup(TyperGroup):
    """click's plain help, with each command's whole first sentence wrapped under its name (click
    cuts it at 45 characters with '...', and at the first '.' of an 'e.g.')."""

    def command_row(self, ctx, name: str) -> tuple[str, str] | None:
        cmd = self.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            return None
        return name, cmd.short_help or _first_sentence(cmd.help)

    def format_commands(self, ctx, formatter) -> None:
        rows = [row for name in self.list_commands(ctx) if (row := self.command_row(ctx, name))]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def sub_app(help: str, **kw) -> typer.Typer:
    """A command group (vazao bill, vazao cost …) with the same help layout as the top level."""
    return typer.Typer(cls=HelpGroup, help=help, rich_markup_mode=None, **kw)


def _help_asked(argv: list[str]) -> bool:
    return "--help" in _head(argv) or not argv


# Every top-level command, in the order `vazao --help` lists them: (the module that registers it on
# `app`, the attribute of a sub-app (a command group) or None for a command, its first sentence).
# A module is imported only when one of its commands runs or shows its help (start-up: importing
# them all cost more than a one-shot command's own work); `vazao --help` reads the sentences here.
# tests/test_help.py checks this table against the commands themselves.
COMMANDS: dict[str, tuple[str, str | None, str]] = {
    "validate": ("vazao.cli.accuracy", None,
                 "Predict every row under its stated conditions and report the errors by metric, engine, GPU "
                 "generation, model family and regime, with the coverage and why each skipped row was skipped"),
    "calibrate": ("vazao.cli.accuracy", None,
                  "Fit the engine family's calibrated parameters (robust loss on log error, each metric group "
                  "weighted alike), one set per engine release in the rows, and write them with the residual "
                  "quantiles per regime that give every prediction its band"),
    "bench": ("vazao.cli.bench", None,
              "Drive a real server with a workload; one RunSummary per level, every request kept in a JSONL"),
    "summarize": ("vazao.cli.bench", None,
                  "Rebuild the summary from a run's records file (e.g. after Ctrl-C or a crash)"),
    "compare": ("vazao.cli.bench", None,
                "Measured runs side by side, or measured against predicted on the same workload"),
    "models": ("vazao.cli.catalog_cmds", None,
               "The model architectures vazao knows (read from their config.json numbers), grouped by family"),
    "gpus": ("vazao.cli.catalog_cmds", None,
             "The accelerators vazao knows: memory, bandwidth, dense peaks, links, rental price"),
    "formats": ("vazao.cli.catalog_cmds", None,
                "Execution formats: bits per weight, weight-only vs weight+activation, and native support"),
    "prefix": ("vazao.cli.cost", None,
               "Find the longest static prefix, the cache hit rate, savings and what breaks the prefix"),
    "fit": ("vazao.cli.physics_cmds", None,
            "Does it fit? Weights, KV per token and per sequence, and how many sequences fit"),
    "estimate": ("vazao.cli.physics_cmds", None,
                 "How fast: decode and prefill per batch size, TTFT, tokens/s, crossover batch, latency floor"),
    "demo": ("vazao.cli.physics_cmds", None,
             "The first screen: the seeds' answers, what fits one GPU (cheapest first, $/Mtok), what to run next"),
    "quality": ("vazao.cli.quality", None,
                "What a format costs on your task: the same prompts to a reference and a candidate server, "
                "greedy; exact match, token agreement, log-probability divergence; a row for plan --quality"),
    "plan": ("vazao.cli.plan", None,
             "The cheapest deployment that meets the SLO at this traffic: ranked, with its Pareto front, the "
             "binding constraint and the command that launches it"),
    "report": ("vazao.cli.report", None,
               "One self-contained HTML report (plots, tables, the inputs that produced it) of a plan, "
               "simulation, bench run, measured-vs-predicted comparison or validation; opens offline"),
    "serve": ("vazao.cli.serve", None,
              "A local web page: explore the roofline, memory, latency and cost as you change the deployment; "
              "simulate, plan, compare and export, offline"),
    "simulate": ("vazao.cli.simulate", None,
                 "Simulate serving: continuous vs static batching, paged vs reserved KV, prefix caching, "
                 "speculative decoding, disaggregated prefill/decode — on your workload, timed by the cost model"),
    "prices": ("vazao.cli.cost", "prices_app", "API price tables (in/out/cache/batch/long-context, with as_of)"),
    "bill": ("vazao.cli.cost", "bill_app", "API bills: requests, conversations, agents, usage logs"),
    "cost": ("vazao.cli.cost", "cost_app",
             "Self-hosted $/Mtok, owning against renting, break-even against an API, training cost"),
    "budget": ("vazao.cli.cost", "budget_app", "Per-task budgets: cost, margin and latency, as a CI gate"),
}


def load_command(name: str) -> _click.Command:
    """The click command for a COMMANDS entry: its module imported (which registers it on `app`), then
    built as typer builds the whole app. A command is found by its name, a sub-app by its attribute."""
    module, attr, _ = COMMANDS[name]
    mod = importlib.import_module(module)
    if attr is None:
        for info in app.registered_commands:
            if (info.name or typer.main.get_command_name(info.callback.__name__)) == name:
                return typer.main.get_command_from_info(info, pretty_exceptions_short=app.pretty_exceptions_short,
                                                        rich_markup_mode=app.rich_markup_mode)
        raise LookupError(f"{module} registers no command {name!r}")
    sub = getattr(mod, attr)
    for group in app.registered_groups:
        if group.typer_instance is sub:
            return typer.main.get_group_from_info(group, pretty_exceptions_short=app.pretty_exceptions_short,
                                                  rich_markup_mode=app.rich_markup_mode,
                                                  suggest_commands=app.suggest_commands)
    raise LookupError(f"{module}.{attr} is not added to the app")


class _LazyCommands(MutableMapping):
    """A group's `commands` that lists every COMMANDS name (and any command already registered) and
    loads one only when it is looked up: click and typer read `commands` for resolving, listing and
    'did you mean' suggestions, so they all see every command without importing its module."""

    def __init__(self, loaded: MutableMapping[str, _click.Command]):
        self.loaded = dict(loaded)

    def __getitem__(self, name: str) -> _click.Command:
        if name not in self.loaded:
            if name not in COMMANDS:
                raise KeyError(name)
            self.loaded[name] = load_command(name)
        return self.loaded[name]

    def __contains__(self, name: object) -> bool:  # without loading it
        return name in COMMANDS or name in self.loaded

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (n for n in self.loaded if n not in COMMANDS)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __setitem__(self, name: str, cmd: _click.Command) -> None:
        self.loaded[name] = cmd

    def __delitem__(self, name: str) -> None:
        del self.loaded[name]


class _Group(HelpGroup):
    """Every failure a user can cause (a click usage error, a VazaoError) becomes one line on stderr
    and exit code 2; `--help` and bare `vazao` still print help. Commands load lazily (COMMANDS)."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.commands = _LazyCommands(self.commands)

    def list_commands(self, ctx) -> list[str]:
        return list(self.commands)  # the names only (typer's reads .items(): every command loaded)

    def command_row(self, ctx, name: str) -> tuple[str, str] | None:
        """A command's line of the list from COMMANDS' sentence while its module is not imported."""
        if name in COMMANDS and name not in self.commands.loaded:
            return name, COMMANDS[name][2]
        return super().command_row(ctx, name)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        argv, as_csv = _take_csv(list(sys.argv[1:] if args is None else args))
        _state.update(json=_wants_json(argv), emitted=False, csv=as_csv, tables=0)
        try:
            if as_csv and _state["json"]:
                raise VazaoError("--csv and --json: choose one")
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
            if as_csv and not _state["tables"] and not _help_asked(argv):
                raise VazaoError(f"--csv: `vazao {' '.join(argv[:1])}` prints no table here; use --json")
        except _click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # the help, on stderr, as click's no_args_is_help does
            sys.exit(2)
        except _click.exceptions.UsageError as exc:
            report_error(_usage_message(exc))
            sys.exit(2)
        except _click.exceptions.ClickException as exc:  # FileError and the like: still the user's input
            report_error(exc.format_message())
            sys.exit(2)
        except VazaoError as exc:
            report_error(error_text(exc))
            sys.exit(2)
        except typer.Abort:
            report_error("aborted")
            sys.exit(130)
        except BrokenPipeError:  # `vazao … | head`: the reader went away; say nothing more
            sys.stdout = _click.utils.PacifyFlushWrapper(sys.stdout)
            sys.exit(1)
        except USER_FAULTS as exc:
            # A reader that missed the shared input layer (vazao.inputs): still the user's input, so
            # one line and exit 2; the word "unexpected" marks it for bench/hostile_sweep.py to flag.
            report_error(f"unexpected {type(exc).__name__}: {exc}")
            sys.exit(2)
        sys.exit(rv if isinstance(rv, int) else 0)


def _no_options() -> None:
    """vazao's own options are --help and --csv (taken out by _Group.main); a group callback gives typer
    a group to build while no command module is imported yet."""


app = typer.Typer(
    cls=_Group,
    callback=_no_options,
    name="vazao",
    help="What will this model cost and how fast will it be, on this hardware, for this traffic?\n\n"
         "After any command, --csv prints its tables as CSV (nothing else on stdout); --json, where a "
         "command has it, one JSON object.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help wraps at 80 columns; rich's panels squeeze it
)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(json_document(obj), indent=2) + "\n")
    sys.stdout.flush()
    _state["emitted"] = True


# A library parameter whose flag has another name (the library says `table`; `bill usage` says --price).
PARAMETER_OPTION = {"table": "price", "cache_ttl": "cache", "duration_s": "duration", "records_path": "records"}


def _leaf_command(exc: BaseException):
    """The click command that was running when `exc` was raised: the innermost frame of its traceback
    holding a click Context (the command's own invoke), else None (raised outside any command)."""
    running = _click.globals.get_current_context(silent=True)  # error_text called inside the command
    if running is not None:
        return running.command
    found = None
    tb = exc.__traceback__
    while tb is not None:
        ctx = tb.tb_frame.f_locals.get("ctx")
        if isinstance(ctx, _click.Context):
            found = ctx.command
        tb = tb.tb_next
    return found


def _flag_for(command, parameter: str) -> str | None:
    names = {parameter, PARAMETER_OPTION.get(parameter, parameter)}
    for p in getattr(command, "params", ()):
        if p.name in names and getattr(p, "param_type_name", "") == "option":
            longs = [o for o in p.opts if o.startswith("--")]
            return longs[0] if longs else p.opts[0]
    return None


def error_text(exc: VazaoError) -> str:
    """A library error as the CLI says it. The library names its parameter (VazaoError.parameter); the
    CLI says the flag of the running command that sets it, where the message names the parameter
    (`count (accelerators) must be …` → `--count must be …`), else before the message. A refused
    overwrite names the option that allows it (the library says force=False; only commands with a
    --force option ask it not to overwrite)."""
    if isinstance(exc, OutputExists):
        return f"{exc.what} {exc.shown} exists; pass --force to overwrite it"
    text = str(exc)
    parameter = getattr(exc, "parameter", None)
    flag = _flag_for(_leaf_command(exc), parameter) if parameter else None
    if flag is None:
        return text
    named = re.compile(rf"`{re.escape(parameter)}`|(?<![\w-]){re.escape(parameter)}(?![\w-])(?: \([^)]*\))?")
    swapped, n = named.subn(flag, text, count=1)
    return swapped if n else f"{flag}: {text}"


def fail(message: str, code: int = 2) -> None:
    report_error(message)
    raise typer.Exit(code)


JSON = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else.")
QUIET = typer.Option(False, "--quiet", "-q", help="No progress bar and no notes on stderr: only the result.")
JUDGE = typer.Option("band", "--judge", help="How a predicted latency is held to an SLO limit: band (its 80% "
                     "band's pessimistic edge must be within it) or prediction (the predicted value).")


def show_progress(json_out: bool, quiet: bool) -> bool:
    """A live bar only for a person watching: stderr a terminal, neither --json nor --quiet."""
    return sys.stderr.isatty() and not json_out and not quiet


def parse_float_list(text: str, what: str, *, maximum: float = limits.MAX_RATE) -> list[float]:
    """'0.5,1,2' -> [0.5, 1.0, 2.0]: positive, finite, no empty items, at most `maximum`."""
    return [float(v) for v in number_list(text, what, maximum=maximum)]


def parse_int_list(text: str, what: str, *, maximum: int = limits.MAX_CONCURRENCY) -> list[int]:
    """'1,4,16' -> [1, 4, 16]: positive whole numbers (1.5 is refused, not rounded), at most `maximum`."""
    return [int(v) for v in number_list(text, what, integer=True, maximum=maximum)]


def check_positive(**values) -> None:
    """Each named option, when given, must be a positive whole number (`--name` in the message) and
    at most its bound in vazao.limits (limits.MAX_COUNT when it has none of its own)."""
    for name, v in values.items():
        if v is not None:
            number(v, f"--{name.replace('_', '-')}", minimum=0, exclusive_min=True,
                   maximum=limits.OPTION_MAX.get(name, limits.MAX_COUNT))
