"""The errors users see, and the one mapping from what happened to the process's exit code.

Exit codes (README, "Exit codes"): 0 the check holds, 1 it does not hold, 2 bad input or usage (the
message names the file or option, the place and what was expected), 3 the environment (Java, the TLC
jar, Spark, TLC or the JVM failing) or an internal error, 130 interrupted (Ctrl-C), 143 terminated
(SIGTERM, 128 + 15, after the same unwind as Ctrl-C).
"""

from __future__ import annotations

HOLDS = 0
DOES_NOT_HOLD = 1
BAD_INPUT = 2
ENVIRONMENT = 3
INTERRUPTED = 130
TERMINATED = 143


class TidemarkError(Exception):
    """Bad input: a file, option or model that is wrong, reported to the user with exit code 2.

    `source` is the file (or option) concerned, `location` the place in it (``line 3, column 7``,
    ``steps[2].node``), `expected` what would have been valid there.
    """

    exit_code = BAD_INPUT

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        location: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.location = location
        self.expected = expected
        super().__init__(self.describe())

    def describe(self) -> str:
        where = ", ".join(part for part in (self.source, self.location) if part)
        text = f"{where}: {self.message}" if where else self.message
        if self.expected:
            text += f" (expected {self.expected})"
        return text


class ToolError(TidemarkError):
    """Not the user's input: Java, the TLC jar or Spark missing or failing, TLC or the JVM stopping on an
    error of its own (out of memory, a crash), or tidemark itself. `source` names the tool; the message
    carries the tool's own words. Exit code 3."""

    exit_code = ENVIRONMENT


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an exception (conformance/scratch.py) so that the run unwinds as after Ctrl-C:
    TLC and Spark stopped, partial files and temporary directories removed."""


def exit_code(error: BaseException) -> int:
    """The exit code for a command that ended with `error` (the one place that decides it)."""
    if isinstance(error, Terminated):
        return TERMINATED
    if isinstance(error, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(error, TidemarkError):
        return error.exit_code
    if isinstance(error, SystemExit):  # argparse: 0 after --help, 2 for a usage error
        return error.code if isinstance(error.code, int) else BAD_INPUT
    return ENVIRONMENT  # an unexpected exception: an internal error
