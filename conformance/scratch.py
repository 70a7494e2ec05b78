"""Where a tidemark process keeps its temporary files, and what makes sure nothing of it outlives it.

Each tidemark process has one scratch directory, `tidemark-PID-XXXX` in the system's temporary
directory (`$TMPDIR`, else /tmp), created when first needed. Everything temporary a run makes lives
in a directory of its own inside it: TLC's metadir and its JVM's `java.io.tmpdir` (TLC extracts the
standard modules there, so runs side by side never read each other's half-written copies), the
modules `validate` generates, `simulate`'s trace files, Spark's local directories. Nothing of a run is
written to a shared temporary location.

With the scratch directory starts the process's guardian (conformance/guardian.py), a small process
that outlives this one by a moment: it is told about every child process to stop (TLC's process
group, Spark's JVM) and holds copies of the run-directory locks (conformance/locks.py). However this
process ends, normally, by an exception, SIGTERM, or SIGKILL, the guardian then stops those processes,
removes the scratch directory and releases the locks, in that order.

SIGTERM itself is turned into an exception by `signals_unwind` (the CLI's main), so a terminated run
unwinds like an interrupted one (Ctrl-C): TLC killed, partial files removed, exit 143 = 128 + 15.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

from tidemark.conformance.errors import Terminated, ToolError
from tidemark.conformance.guardian import process_stat

GUARDIAN = Path(__file__).with_name("guardian.py")
ROOT_PREFIX = "tidemark-"


class _Guardian:
    """This process's scratch directory and the guardian process watching over it."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.root = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{self.owner}-"))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(GUARDIAN), str(self.root)],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as error:
            ours.close()
            shutil.rmtree(self.root, ignore_errors=True)
            raise ToolError(
                f"cannot start tidemark's guardian process: {error}", source=sys.executable
            ) from error
        finally:
            theirs.close()
        self.channel = ours
        self.sending = threading.Lock()

    def send(self, message: str, fd: int | None = None) -> None:
        with self.sending, suppress(OSError):  # a guardian killed by hand: the run goes on without it
            socket.send_fds(self.channel, [message.encode()], [] if fd is None else [fd])

    def close(self) -> None:
        """The guardian stops what is still watched (Spark's JVM), removes the scratch directory and
        exits; this process waits for that, so that nothing of it is left when it has exited."""
        self.channel.close()
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)


_current: _Guardian | None = None
_creating = threading.Lock()


def _guardian() -> _Guardian:
    global _current
    with _creating:
        if _current is None:
            _current = _Guardian()
        return _current


def _at_exit() -> None:
    if _current is not None and _current.owner == os.getpid():
        _current.close()


def _after_fork() -> None:
    """A forked child starts its own scratch directory and guardian when it needs them; its copy of
    the parent's socket is closed so the parent's guardian still sees the parent's end."""
    global _current
    if _current is not None:
        _current.channel.close()
    _current = None


atexit.register(_at_exit)
os.register_at_fork(after_in_child=_after_fork)


def scratch_root() -> Path:
    """This process's scratch directory (created, with the guardian, on first use)."""
    return _guardian().root


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A new directory inside this process's scratch directory, removed when the block ends."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=scratch_root()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def watch(pid: int, *, group: bool) -> None:
    """Have the guardian stop process `pid` (with `group`, its whole process group) if this process
    ends while it still runs."""
    stat = process_stat(pid)
    if stat is not None:
        _guardian().send(f"watch {pid} {stat[2]} {int(group)}")


def forget(pid: int) -> None:
    """The process has ended and been waited for: the guardian must no longer signal its pid."""
    _guardian().send(f"forget {pid}")


def hold(key: str, fd: int) -> None:
    """Give the guardian a copy of a locked descriptor: the lock outlasts this process until the
    guardian has cleaned up after it."""
    _guardian().send(f"hold {key}", fd)


def release(key: str) -> None:
    _guardian().send(f"release {key}")


@contextmanager
def signals_unwind() -> Iterator[None]:
    """Within the block (in the main thread), SIGTERM raises Terminated; a second SIGTERM during the
    unwind is ignored (SIGKILL still works, and the guardian cleans up after it)."""

    def terminated(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated("SIGTERM")

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may handle signals
        return
    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
