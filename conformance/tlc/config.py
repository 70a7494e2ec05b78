"""Reading a TLC model config (.cfg): the constants a mapping needs, and what the model checks.

Only the subset the project's models use: CONSTANT(S) with `Name = value` (values in TLA+ syntax,
parsed like TLC's output) or `Name <- Def`, SPECIFICATION / INIT / NEXT, INVARIANT(S), PROPERTY(IES),
VIEW, SYMMETRY, CONSTRAINT(S). `\\*` comments and `(* *)` blocks are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tidemark.conformance.errors import TidemarkError
from tidemark.conformance.tlc.parse import TlaValueError, parse_value
from tidemark.conformance.tlc.values import TLC_INT_MAX, TLC_INT_MIN, Value, integers_beyond_tlc

_KEYWORDS = {
    "CONSTANT": "constants",
    "CONSTANTS": "constants",
    "SPECIFICATION": "specification",
    "INIT": "init",
    "NEXT": "next",
    "INVARIANT": "invariants",
    "INVARIANTS": "invariants",
    "PROPERTY": "properties",
    "PROPERTIES": "properties",
    "VIEW": "view",
    "SYMMETRY": "symmetry",
    "CONSTRAINT": "constraints",
    "CONSTRAINTS": "constraints",
    "ACTION_CONSTRAINT": "constraints",
    "ACTION_CONSTRAINTS": "constraints",
    "CHECK_DEADLOCK": "unsupported",
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class ModelConfig:
    path: Path
    constants: dict[str, Value] = field(default_factory=dict)
    substitutions: dict[str, str] = field(default_factory=dict)  # Name <- Definition
    specification: str | None = None
    init: str | None = None
    next: str | None = None
    invariants: list[str] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)
    view: str | None = None
    symmetry: str | None = None
    constraints: list[str] = field(default_factory=list)


def _strip_comments(text: str) -> str:
    text = re.sub(r"\(\*.*?\*\)", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"\\\*.*", "", text)


def _statements(text: str, source: str) -> list[tuple[int, str, str]]:
    """Split the config into (line, keyword, body) at each top-level keyword."""
    found: list[tuple[int, str, str]] = []
    pattern = re.compile(r"^[ \t]*(" + "|".join(sorted(_KEYWORDS, key=len, reverse=True)) + r")\b", re.M)
    matches = list(pattern.finditer(text))
    head = text[: matches[0].start()] if matches else text
    if head.strip():
        stray = len(head) - len(head.lstrip())
        line = text[:stray].count("\n") + 1
        raise TidemarkError(
            "text before the first keyword", source=source, location=f"line {line}", expected="CONSTANTS, ..."
        )
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        found.append((text[: match.start(1)].count("\n") + 1, match.group(1), text[match.end() : end]))
    return found


def _constants(body: str, line: int, config: ModelConfig) -> None:
    """`Name = value` / `Name <- Definition` assignments; a value may span lines. `line`: the keyword's."""
    heads = list(re.finditer(r"(?m)^[ \t]*([A-Za-z_]\w*)[ \t]*(=|<-)", body))
    stray = body[: heads[0].start()] if heads else body
    if stray.strip():
        raise TidemarkError(
            f"unexpected {stray.strip()[:40]!r}",
            source=str(config.path),
            location=f"line {line + body[: len(stray) - len(stray.lstrip())].count(chr(10))}",
            expected="'Name = value' or 'Name <- Definition'",
        )
    for index, head in enumerate(heads):
        end = heads[index + 1].start() if index + 1 < len(heads) else len(body)
        name, operator, value_text = head.group(1), head.group(2), body[head.end() : end]
        if operator == "<-":
            config.substitutions[name] = value_text.strip()
            continue
        where = f"line {line + body[: head.start(1)].count(chr(10))}"
        try:
            config.constants[name] = parse_value(value_text.strip(), source=str(config.path))
        except TlaValueError as error:
            raise TidemarkError(
                f"constant {name} has a value TLC would not accept: {error.message}",
                source=str(config.path),
                location=where,
                expected=error.expected,
            ) from error
        for _, number in integers_beyond_tlc(config.constants[name], name):
            raise TidemarkError(
                f"constant {name} holds {number}, beyond TLC's integers",
                source=str(config.path),
                location=where,
                expected=f"integers from {TLC_INT_MIN} to {TLC_INT_MAX}",
            )


def read_config(path: Path) -> ModelConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise TidemarkError(f"cannot read the model config: {error.strerror}", source=str(path)) from error
    config = ModelConfig(path=path)
    for line, keyword, body in _statements(_strip_comments(text), str(path)):
        target = _KEYWORDS[keyword]
        if target == "constants":
            _constants(body, line, config)
            continue
        if target == "unsupported":
            raise TidemarkError(
                f"TLC 2.15 does not support {keyword}",
                source=str(path),
                location=f"line {line}",
                expected="deadlock checking set on the command line (TlcOptions.check_deadlock)",
            )
        words = _WORD.findall(body)
        if target in ("invariants", "properties", "constraints"):
            getattr(config, target).extend(words)
        elif len(words) != 1:
            raise TidemarkError(
                f"{keyword} takes one name, found {len(words)}",
                source=str(path),
                location=f"line {line}",
                expected="one operator name",
            )
        else:
            setattr(config, target, words[0])
    return config
