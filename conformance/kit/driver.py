"""One driver process: started, greeted, asked, restarted after it fails, and never left behind.

A driver is started in a process group of its own and handed to this process's guardian
(conformance/scratch.py): if tidemark ends in any way, the driver and whatever it started end too.
What a driver does wrong while answering (it exits, stays silent past the timeout, writes a line that is
not the answer its request allows, answers `error`) is a `DriverFault`: a finding about the
implementation, which replay reports with the path that caused it before it restarts the driver. A
driver that cannot be started or greeted at all is the environment's problem (exit code 3), and a
driver for another spec a usage error (exit code 2).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tidemark.conformance.errors import TidemarkError, ToolError
from tidemark.conformance.kit.protocol import (
    MAX_BATCH,
    PROTOCOL,
    HelloAnswer,
    MalformedAnswer,
    StateAnswer,
    batch_text,
    parse_answer,
    parse_batch,
    parse_hello,
    request_text,
)
from tidemark.conformance.scratch import forget, watch
from tidemark.conformance.tlc.values import Value, to_itf

STDERR_LINES = 20  # the driver's last stderr lines kept for a finding
START_TIMEOUT = 120.0  # seconds to the hello answer: a driver may build itself first (javac)


class DriverFault(Exception):
    """The driver failed while answering: a finding about the implementation, not a tidemark error."""


class Driver:
    """A driver process for one spec and model; `start` (again) after a fault."""

    def __init__(
        self,
        command: Sequence[str],
        spec: str,
        constants: Mapping[str, Value],
        *,
        timeout: float = 60.0,
        cwd: Path | None = None,
    ) -> None:
        self.command, self.spec, self.timeout, self.cwd = list(command), spec, timeout, cwd
        itf = {name: to_itf(v) for name, v in sorted(constants.items())}
        self.init = ("init", request_text("init", '"constants":' + json.dumps(itf)))
        self.process: subprocess.Popen[str] | None = None
        self.hello: HelloAnswer | None = None
        self.line = 0  # lines read from the driver's output since it started
        self.starts = 0
        self.retired = False
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)

    @property
    def capabilities(self) -> set[str]:
        return set(self.hello.capabilities) if self.hello else set()

    # --- the process ----------------------------------------------------------------------------------

    def start(self) -> StateAnswer:
        """(Re)start the process, greet it and configure the model; the initial state's answer."""
        self.close()
        if self.retired:
            raise DriverFault("the run is ending")
        self.starts += 1
        try:
            self.process = subprocess.Popen(
                self.command,
                cwd=self.cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                start_new_session=True,
            )
        except OSError as error:
            raise ToolError(f"cannot start the driver: {error}", source=" ".join(self.command)) from error
        watch(self.process.pid, group=True)
        self.line = 0
        self._lines = queue.Queue()
        self._stderr.clear()
        assert self.process.stdout is not None and self.process.stderr is not None
        threading.Thread(target=self._read, args=(self.process.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()
        try:
            hello = request_text("hello", f'"protocol":{PROTOCOL},"spec":{json.dumps(self.spec)}')
            text = self._ask(hello, START_TIMEOUT)
            self.hello = parse_hello(text, self.line)
        except (DriverFault, MalformedAnswer) as error:
            self.close()
            raise ToolError(
                f"the driver did not answer hello: {error}", source=" ".join(self.command)
            ) from None
        if self.hello.protocol != PROTOCOL:
            self.close()
            raise ToolError(
                f"the driver speaks protocol {self.hello.protocol}, tidemark speaks {PROTOCOL}",
                source=" ".join(self.command),
            )
        if self.hello.spec != self.spec:
            self.close()
            raise TidemarkError(
                f"the driver implements {self.hello.spec}, not {self.spec}",
                source=" ".join(self.command),
                expected=f"a driver for {self.spec}",
            )
        answer = self.ask([self.init])[0]
        if not isinstance(answer, StateAnswer):
            raise DriverFault(f"init answered {answer.type}: {getattr(answer, 'message', '')}")
        return answer

    @staticmethod
    def _read(stream: Any, lines: queue.Queue[str | None]) -> None:
        for text in stream:
            lines.put(text)
        lines.put(None)

    def _drain(self, stream: Any) -> None:
        for text in stream:
            self._stderr.append(text.rstrip("\n"))

    def retire(self) -> None:
        """Stop the process for good: `start` fails from now on."""
        self.retired = True
        self.close()

    def close(self) -> None:
        """Stop the process (its whole group) and wait for it."""
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            assert process.stdin is not None
            process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=2)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever the driver started goes with it
        process.wait()
        forget(process.pid)

    def stderr_tail(self) -> str:
        return " | ".join(self._stderr)

    # --- asking ---------------------------------------------------------------------------------------

    def _ask(self, message: str, timeout: float) -> str:
        """Send one line, return the answer's line; DriverFault if the driver exits or stays silent."""
        process = self.process
        assert process is not None and process.stdin is not None
        try:
            process.stdin.write(message + "\n")
            process.stdin.flush()
        except OSError:
            pass  # it exited: the reader sees the end of its output
        try:
            text = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise DriverFault(f"the driver did not answer within {timeout:g} s (stopped)") from None
        if text is None:
            code = process.wait()
            tail = self.stderr_tail()
            self.close()
            raise DriverFault(
                f"the driver exited with code {code}" + (f"; its stderr: {tail}" if tail else "")
            )
        self.line += 1
        return text

    def ask(self, requests: Sequence[tuple[str, str]]) -> list[Any]:
        """The answers to `requests`, (type, line) pairs (protocol.request_text), batched when the driver
        can; DriverFault on any failure (the process is then stopped: `start` it again)."""
        answers: list[Any] = []
        try:
            if "batch" in self.capabilities:
                for at in range(0, len(requests), MAX_BATCH):
                    chunk = requests[at : at + MAX_BATCH]
                    text = self._ask(batch_text([line for _, line in chunk]), self.timeout)
                    answers += parse_batch([kind for kind, _ in chunk], text, self.line)
            else:
                for kind, line in requests:
                    answers.append(parse_answer(kind, self._ask(line, self.timeout), self.line))
        except MalformedAnswer as error:
            self.close()
            raise DriverFault(str(error)) from None
        return answers


def probe(make: Callable[[], Driver]) -> Driver:
    """A driver made, started (its hello read) and stopped: its capabilities before the replay starts, and
    a driver that cannot start fails here, before any replay process or Spark task runs."""
    driver = make()
    try:
        driver.start()
    except DriverFault as fault:
        raise ToolError(f"the driver failed at init: {fault}", source=" ".join(driver.command)) from None
    finally:
        driver.close()
    return driver
