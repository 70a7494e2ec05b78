"""The one error type users see: it names the file, the place in it and what was expected."""

from __future__ import annotations


class TidemarkError(Exception):
    """A problem with an input (file, config, tool) reported to the user with a non-zero exit code.

    `source` is the file (or tool) concerned, `location` the place in it (``line 3, column 7``,
    ``steps[2].node``), `expected` what would have been valid there.
    """

    exit_code = 2

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
