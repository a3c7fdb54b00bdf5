"""A rich table that fits the width it is drawn at without cutting an id or a number.

`FittedTable` holds every column (so `--csv`, which reads `table.columns`, keeps them all) and, when the
terminal draws it, renders a copy narrowed to the width available: first the short headers, then it
leaves out the least important columns, one at a time, until the rest fit whole. Columns marked `prose`
may wrap between words, never inside one; every other column is drawn on one line. A caption names what
was left out. Only a table whose kept columns (`keep=None`) alone are wider than the terminal still cuts.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

# the look of vazao's compact tables (demo_console's): a rule under the header, one space between columns
STYLE = {"box": box.SIMPLE_HEAD, "padding": (0, 0, 0, 1), "pad_edge": False, "show_edge": False}
UNBOUNDED = 10_000


@dataclass(frozen=True)
class ColumnFit:
    keep: int | None  # None: never left out; otherwise lower numbers go first
    short: str | None  # a shorter header for narrow terminals
    prose: bool  # may wrap between words
    min_width: int  # a prose column narrower than this (or than its longest word) is left out instead


class FittedTable(Table):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **{**STYLE, **kwargs})
        self._fits: list[ColumnFit] = []

    def add_column(self, header: str = "", *, keep: int | None = None, short: str | None = None,
                   prose: bool = False, min_width: int = 20, **kwargs) -> None:
        """keep: None for a column never left out (an id), else its rank (lower leaves first); short: the
        header to use when space is tight; prose: the cells may wrap between words, in no fewer than
        min_width characters."""
        kwargs.setdefault("no_wrap", not prose)
        if prose:
            kwargs.setdefault("overflow", "fold")
        super().add_column(header, **kwargs)
        self._fits.append(ColumnFit(keep, short, prose, min_width))

    def _copy(self, shown: list[int], short: bool, width: int, prose_widths: dict | None = None) -> Table:
        left_out = [str(self.columns[i].header) for i in range(len(self.columns)) if i not in shown]
        caption = f"not shown at {width} columns: {', '.join(left_out)} (wider terminal, --json or --csv)"
        t = Table(title=self.title, title_justify=self.title_justify, title_style=self.title_style,
                  caption=caption if left_out else None, caption_justify="left", caption_style="dim",
                  box=self.box, padding=self.padding, pad_edge=self.pad_edge, show_edge=self.show_edge,
                  show_header=self.show_header, expand=False)
        for i in shown:
            col, fit = self.columns[i], self._fits[i]
            header = fit.short if (short and fit.short) else col.header
            if fit.prose:  # its minimum while fitting, then its share of the spare width
                fixed = (prose_widths or {}).get(i)
            else:  # one line: exactly as wide as its widest cell (rich would otherwise squeeze it)
                fixed = max(_cell_width(c) for c in [header, *col.cells])
            t.add_column(header, justify=col.justify, no_wrap=col.no_wrap, overflow=col.overflow,
                         min_width=self._prose_min(i) if fit.prose else None, width=fixed, style=col.style,
                         header_style=col.header_style)
        for row in zip(*(list(self.columns[i].cells) for i in shown), strict=True):
            t.add_row(*row)
        return t

    def fitted(self, console: Console, width: int) -> Table:
        """The copy drawn at `width`: all columns if they fit, else the fewest left out."""
        shown = list(range(len(self.columns)))
        short = False
        while True:
            t = self._copy(shown, short, width)
            need = Measurement.get(console, console.options.update_width(UNBOUNDED), t).minimum
            if need <= width:
                return self._copy(shown, short, width, self._share(shown, width - need))
            if not short and any(self._fits[i].short for i in shown):
                short = True
                continue
            droppable = [i for i in shown if self._fits[i].keep is not None]
            if not droppable:
                return t  # only the kept columns remain: draw them, even if the terminal cuts them
            shown.remove(min(droppable, key=lambda i: (self._fits[i].keep, -i)))

    def _prose_min(self, i: int) -> int:
        return max(_longest_word(self.columns[i]), self._fits[i].min_width)

    def _share(self, shown: list[int], spare: int) -> dict[int, int]:
        """Fixed widths for the prose columns: each its minimum plus a share of the spare width, up to
        what its longest cell needs, so rich never has to squeeze (and cut) a one-line column."""
        prose = [i for i in shown if self._fits[i].prose]
        widths = {i: self._prose_min(i) for i in prose}
        wants = {i: max(_cell_width(c) for c in [self.columns[i].header, *self.columns[i].cells])
                 for i in prose}
        while spare > 0:
            hungry = [i for i in prose if widths[i] < wants[i]]
            if not hungry:
                break
            for i in hungry:
                if spare == 0:
                    break
                widths[i] += 1
                spare -= 1
        return widths

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.fitted(console, options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.fitted(console, options.max_width))


def _longest_word(col) -> int:
    """The narrowest a prose column can be without splitting a word (or a number) of its header or cells."""
    return max((len(w) for cell in [col.header, *col.cells] for w in _plain(cell).split()), default=1)


def _cell_width(cell) -> int:
    return max((Text(line).cell_len for line in _plain(cell).splitlines()), default=0)


def _plain(cell) -> str:
    if isinstance(cell, Text):
        return cell.plain
    return Text.from_markup(cell).plain if isinstance(cell, str) else str(cell)
