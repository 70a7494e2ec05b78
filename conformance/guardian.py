"""The guardian of one tidemark process: it cleans up after that process, however the process ends.

conformance/scratch.py starts it with one end of a socket pair as its standard input and tells it, over
that socket, which processes to stop (TLC's JVM and its process group, Spark's JVM), and hands it the
run-directory locks the tidemark process holds (the locked file descriptors themselves, so the locks
stay held while the guardian holds its copies). When the socket closes, because the tidemark process
exited or was killed (SIGKILL included), the guardian stops those processes (SIGTERM, then SIGKILL
after a grace period), removes the process's scratch directory, and only then exits, which releases
the locks: a run waiting for a lock never starts beside the remains of the one before.

Run as `python -I -S guardian.py SCRATCH`; it imports only the standard library. Linux only (/proc).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path

GRACE = 3.0  # seconds a process has to end after SIGTERM, and again after SIGKILL
MESSAGE = 4096  # bytes, more than any message
MAX_FDS = 4


def process_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, start time in clock ticks) of a live process; None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # the command name in parentheses may hold spaces
    if fields[0] in ("Z", "X"):  # a zombie has ended; only its parent's wait is missing
        return None
    return fields[0], int(fields[2]), int(fields[19])


class Watched:
    """A process (and with `group` its whole process group) to stop when the tidemark process ends.

    The start time tells the process apart from a later one that reuses its pid."""

    def __init__(self, pid: int, start: int, group: bool) -> None:
        self.pid, self.start, self.group = pid, start, group

    def same(self) -> bool:
        stat = process_stat(self.pid)
        return stat is not None and stat[2] == self.start

    def running(self) -> bool:
        if self.same():
            return True
        if not self.group:
            return False
        members = (int(entry) for entry in os.listdir("/proc") if entry.isdigit())
        return any((stat := process_stat(pid)) is not None and stat[1] == self.pid for pid in members)

    def signal(self, number: int) -> None:
        if not self.same():
            return  # ended, or its pid now belongs to another process: never signal that one
        try:
            if self.group:
                os.killpg(self.pid, number)
            else:
                os.kill(self.pid, number)
        except (ProcessLookupError, PermissionError):
            pass


def stop(watched: list[Watched]) -> None:
    for number in (signal.SIGTERM, signal.SIGKILL):
        for process in watched:
            process.signal(number)
        deadline = time.monotonic() + GRACE
        while any(p.running() for p in watched) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not any(p.running() for p in watched):
            return


def serve(channel: socket.socket, scratch: Path) -> None:
    """Follow the tidemark process's messages until its end of the socket closes, then clean up."""
    watched: dict[int, Watched] = {}
    locks: dict[str, int] = {}
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(channel, MESSAGE, MAX_FDS)
        except ConnectionResetError:
            data, fds = b"", []
        if not data:
            break
        verb, _, argument = data.decode().partition(" ")
        if verb == "watch":
            pid, start, group = (int(part) for part in argument.split())
            watched[pid] = Watched(pid, start, bool(group))
        elif verb == "forget":
            watched.pop(int(argument), None)
        elif verb == "hold" and fds:
            locks[argument] = fds[0]
        elif verb == "release" and argument in locks:
            os.close(locks.pop(argument))
    stop(list(watched.values()))
    # A process stopped a moment ago may have created files until it ended: remove, look, remove again.
    for _ in range(3):
        shutil.rmtree(scratch, ignore_errors=True)
        time.sleep(0.1)
        if not scratch.exists():
            break
    for fd in locks.values():
        os.close(fd)


def main() -> int:
    # Started in a session of its own, it gets none of the terminal's signals (Ctrl-C, hang-up): it ends
    # when the socket closes, after the tidemark process, whatever ended that.
    serve(socket.socket(fileno=0), Path(sys.argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
