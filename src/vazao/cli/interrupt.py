"""How `vazao bench` takes SIGINT and SIGTERM: the first stops the run cleanly (the requests in flight
end as `cancelled` records, the summary and result file are still written); a second is noted and
changes nothing, so a double Ctrl-C never cuts the records short; a third ends the process at once.
However the clean-up goes, the process ends within `GRACE_S` of the first signal: a watchdog thread
prints where the clean-up stood and exits, so an interrupted bench never hangs.

Signals are the main thread's: in any other thread (an embedding program) nothing is installed."""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Callable

__all__ = ["GRACE_S", "Interrupted", "Interrupts"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)
NUDGE_S = 1.0  # how often a run whose cancellation was swallowed is cancelled again
GRACE_S = 60.0  # well over the clean-up's own bounds: 5 s for cancelled requests, 6 s for the metrics scrape


class Interrupted(BaseException):
    """A signal that came before the event loop took signals over."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _quit_now(signum: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        # RuntimeError: a handler that interrupted this stream's own write ("reentrant call")
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            stream.flush()
    os._exit(128 + signum)  # the records file is flushed line by line: what it holds is whole


def _watchdog(signum: int, loop: asyncio.AbstractEventLoop | None = None) -> None:
    print(f"error: the clean-up after {signal.Signals(signum).name} took over {GRACE_S:g} s; quitting. "
          "Where it stood:", file=sys.stderr, flush=True)
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    if loop is not None:
        # The main thread sits in the loop's poll while a task waits: the tasks' own stacks say on
        # what. Read from this thread without the loop's lock, which is good enough for a last word.
        with contextlib.suppress(Exception):
            for task in list(asyncio.all_tasks(loop)):
                task.print_stack(limit=8, file=sys.stderr)
    _quit_now(signum)


class Interrupts:
    """Signal handling around one bench run: `install()` before the event loop starts, `attach(task)`
    inside it, `restore()` when the command is done. `got` lists the signals in the order they came."""

    def __init__(self, say: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True)):
        self.got: list[int] = []
        self.active = threading.current_thread() is threading.main_thread()
        self._say = say
        self._saved: dict[int, object] = {}
        self._timer: threading.Timer | None = None
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def first(self) -> int | None:
        return self.got[0] if self.got else None

    def _count(self, signum: int, in_loop: bool = False) -> int:
        self.got.append(signum)
        n = len(self.got)
        if n == 1:
            self._timer = threading.Timer(GRACE_S, _watchdog, (signum, self._loop))
            self._timer.daemon = True
            self._timer.start()
        elif n == 2:
            text = "still writing the records of the requests in flight; once more to quit at once"
            if in_loop:  # a loop callback: any code may run
                self._say(text)
            else:
                # A Python signal handler runs between two bytecodes of whatever the main thread was doing,
                # an import included: `say` (rich) imported its emoji table there and met it half-built
                # (ImportError, exit 1, under a loaded suite). A fixed line, straight to the descriptor.
                with contextlib.suppress(OSError):
                    os.write(2, f"{text}\n".encode())
        else:
            _quit_now(self.got[0])
        return n

    def _early(self, signum, frame) -> None:
        if self._count(signum) == 1:
            raise Interrupted(signum)

    def _late(self, signum, frame) -> None:
        # The loop is over and the summary is being written: a first signal here ends the command
        # (exit 128+signal); a second after an interrupt is let pass so the result file is whole.
        if self._count(signum) == 1:
            raise SystemExit(128 + signum)

    def _in_loop(self, signum: int) -> None:
        if self._count(signum, in_loop=True) == 1 and self._task is not None:
            self._task.cancel()
            self._watch(self._task)

    def _watch(self, task: asyncio.Task) -> None:
        task.get_loop().call_later(NUDGE_S, self._nudge, task)

    def _nudge(self, task: asyncio.Task) -> None:
        """A cancellation taken back below (a handler that calls `uncancel()` on the wrong task) would
        leave the run going until the watchdog ends it: cancel again while the run's task is not
        done and holds no cancellation. One still being handled (cancelling() > 0) is left alone,
        so the clean-up's own bounded waits are never cut short."""
        if task.done() or self._task is not task:
            return
        if task.cancelling() == 0:
            task.cancel()
        self._watch(task)

    def install(self) -> None:
        if not self.active:
            return
        for sig in SIGNALS:
            self._saved[sig] = signal.getsignal(sig)
            signal.signal(sig, self._early)

    def attach(self, task: asyncio.Task) -> None:
        """Called from the run's task: the loop's own handlers cancel it on the first signal."""
        if not self.active:
            return
        self._task = task
        loop = self._loop = task.get_loop()
        for sig in SIGNALS:
            loop.add_signal_handler(sig, self._in_loop, sig)

    def detach(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self.active:
            return
        for sig in SIGNALS:
            signal.signal(sig, self._late)  # before the loop lets go, so no signal finds the default handler
            loop.remove_signal_handler(sig)
            signal.signal(sig, self._late)
        self._task = None

    def after_loop(self) -> None:
        if not self.active:
            return
        for sig in SIGNALS:
            signal.signal(sig, self._late)

    def restore(self) -> None:
        """The command is done. After an interrupt the process is ending with 128+signal: further
        signals are ignored from here, since the interpreter's shutdown puts back the default
        action for handlers it installed, and a late Ctrl-C would then kill it mid-exit with no
        exit code. The watchdog is stopped either way."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.active:
            return
        for sig, handler in self._saved.items():
            signal.signal(sig, signal.SIG_IGN if self.got else handler)
        self._saved.clear()
