"""What a long command shows while it works, on stderr.

- On a terminal: one live status line (rich), the current phase and TLC's latest progress message.
- Without one (CI, a pipe): a plain line per phase, and a heartbeat line at most every 30 s while a
  phase lasts, with TLC's latest progress message, so a CI log shows where a long run is.
- `--json` keeps stderr quiet (the JSON is the output); `-q` prints errors only; `-v` also passes
  every line of TLC's output through.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape

# soft_wrap: paths and messages are never broken mid-word when output is not a terminal.
# Tables get a readable width when output goes to a file or CI log (rich assumes 80 there).
_WIDTH = None if sys.stdout.isatty() else 140
console = Console(stderr=True, soft_wrap=True)  # progress, notices and errors
out = Console(soft_wrap=True, width=_WIDTH)  # results

HEARTBEAT_SECONDS = 30.0
# TLC's lines that say where it is (the rest of its output is noise while it works).
_TLC_PROGRESS = ("Progress(", "Finished computing", "Starting...", "Computing initial")


class Status:
    """Receives the phases of a command and TLC's output lines, and shows them as the mode says:
    "live" (a rich status), "plain" (lines and heartbeats), "quiet" (nothing); `verbose` adds TLC's
    every line."""

    def __init__(self, console: Console, mode: str, verbose: bool = False, live: Any | None = None) -> None:
        self._console, self._mode, self._verbose, self._live = console, mode, verbose, live
        self._phase = "starting"
        self._latest = ""
        self._since = time.monotonic()
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        """A line of TLC's output."""
        if self._verbose:
            self._console.print(f"[dim]{escape(text)}[/]", highlight=False)
        if text.startswith(_TLC_PROGRESS):
            with self._lock:
                self._latest = text[:120]
            if self._live is not None:
                self._live.update(f"{self._phase} — {text[:100]}")

    def phase(self, text: str) -> None:
        with self._lock:
            self._phase, self._latest, self._since = text, "", time.monotonic()
        if self._live is not None:
            self._live.update(text)
        elif self._mode == "plain":
            self._console.print(f"tidemark: {escape(text)}", highlight=False)

    def heartbeat(self) -> None:
        """The plain mode's line while a phase lasts."""
        with self._lock:
            elapsed = time.monotonic() - self._since
            latest = f"; TLC: {self._latest}" if self._latest else ""
            text = f"tidemark: still {self._phase} ({elapsed:.0f} s{latest})"
        self._console.print(escape(text), highlight=False)


@contextmanager
def progress(console: Console, *, json: bool, quiet: bool, verbose: bool) -> Iterator[Status]:
    """The Status of one command run; a plain-mode heartbeat thread lives exactly as long as the run."""
    if quiet or (json and not verbose):
        yield Status(console, "quiet", verbose=verbose and not quiet)
        return
    if console.is_terminal and not json:
        with console.status("starting…") as live:
            yield Status(console, "live", verbose, live)
        return
    status = Status(console, "plain", verbose)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_SECONDS):
            status.heartbeat()

    thread = threading.Thread(target=beat, name="tidemark-heartbeat", daemon=True)
    thread.start()
    try:
        yield status
    finally:
        stop.set()
        thread.join()
