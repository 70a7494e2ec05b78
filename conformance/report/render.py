"""The report's jinja2 environment: the templates in templates/, HTML-escaped by default (autoescape on:
every value from a report is text; only what a template rendered is markup), and the filters they share."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

TEMPLATES = Path(__file__).parent / "templates"
STYLE = (TEMPLATES / "style.css").read_text(encoding="utf-8")


def figure(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def seconds(value: float) -> str:
    return f"{value:.1f}"


def count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(figure=figure, seconds=seconds, count=count)
    return env
