"""One run at a time per output directory: an exclusive lock on DIR/.tidemark.lock.

`conform` locks its run directory, `zoo` its work directory, `verify` its --out directory (and, through
conform and zoo, theirs). A second run on a locked directory waits, with a notice (the `tidemark`
logger's, one line on stderr from the CLI), until the first is done; with `--no-wait` it fails at once
with DirectoryBusy (exit 3: the input is fine, the directory is in use). Runs on different
directories never wait for each other.

The lock is an flock(2) on the lock file, so the kernel drops it when its holders die, whatever killed
them. Its holders are this process and its guardian (conformance/scratch.py): after a SIGKILL the
guardian first stops the dead run's TLC and Spark processes, and only then lets the lock go, so a
waiting run never starts while they still write into the directory. Threads of one process queue on
an in-process lock first (an flock is per open file, so a second open in the same process would wait
for itself); the thread that holds a directory may lock it again.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tidemark.conformance.errors import TidemarkError, ToolError
from tidemark.conformance.scratch import hold, release

LOCK_FILE = ".tidemark.lock"


class DirectoryBusy(ToolError):
    """Another run holds the directory's lock and the caller chose not to wait (--no-wait)."""


_threads: dict[str, threading.RLock] = {}  # one per directory, for the threads of this process
_depth: dict[str, int] = {}  # how often the holding thread has locked the directory
_registry = threading.Lock()


def _notice(text: str) -> None:
    logging.getLogger("tidemark").warning("%s", text)  # the CLI shows it as a one-line notice


def _holder(fd: int) -> str:
    text = os.pread(fd, 300, 0).decode("utf-8", errors="replace").strip()
    return text or "its pid is not recorded yet"


def _busy(directory: Path, holder: str) -> DirectoryBusy:
    return DirectoryBusy(
        f"in use by another tidemark run ({holder})",
        source=str(directory),
        expected="no other run on it: run without --no-wait to wait for that one, or use another directory",
    )


def _open(directory: Path) -> int:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        return os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise TidemarkError(
            f"cannot create or lock it: {error.strerror}",
            source=str(directory),
            expected="a directory tidemark may create and write to",
        ) from error


def _acquire(directory: Path, key: str, wait: bool, notice: Callable[[str], None]) -> int:
    """The locked descriptor of the directory's lock file (our pid and command recorded in it), a copy
    of which the guardian holds."""
    fd = _open(directory)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise _busy(directory, _holder(fd)) from None
            notice(
                f"{directory} is in use by another run ({_holder(fd)}); waiting for it to finish"
                " (--no-wait fails instead)"
            )
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}: {' '.join(sys.argv)}\n".encode(), 0)
        hold(key, fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def locked(
    directory: Path, *, wait: bool = True, notice: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold `directory`'s lock for the block (created with the directory if missing). If another run
    holds it: wait, telling `notice` (default: the `tidemark` logger) once, or raise DirectoryBusy when
    not `wait`."""
    key = str(directory.resolve())
    with _registry:
        in_process = _threads.setdefault(key, threading.RLock())
    if not in_process.acquire(blocking=False):
        holder = f"pid {os.getpid()}, another thread of this process"
        if not wait:
            raise _busy(directory, holder)
        (notice or _notice)(f"{directory} is in use by another run ({holder}); waiting for it to finish")
        in_process.acquire()
    try:
        fd = None
        if _depth.get(key, 0) == 0:
            fd = _acquire(directory, key, wait, notice or _notice)
        _depth[key] = _depth.get(key, 0) + 1
        try:
            yield
        finally:
            _depth[key] -= 1
            if fd is not None:
                os.ftruncate(fd, 0)
                release(key)
                os.close(fd)
    finally:
        in_process.release()
