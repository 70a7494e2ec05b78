"""Inline SVG bar charts (templates/bar_chart.svg.j2): the report's action coverage, seconds per phase and
distinct states by depth, and the audit's conflicts. Drawn here so that pages load nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from markupsafe import Markup

from tidemark.conformance.report.render import environment

# Pixels: the narrowest label column, a label's character, the longest bar, a row, the title's row.
LABEL_WIDTH, CHAR_WIDTH, BAR_WIDTH, ROW, TOP = 120, 7, 360, 22, 26


def bar_chart(
    title: str,
    counts: Mapping[str, float],
    names: Sequence[str],
    shown: Callable[[float], str] = lambda v: f"{v:,}",
    zero_warns: bool = True,
) -> Markup:
    """Horizontal bars, one per name (0 for names without a count), scaled to the largest count;
    `shown` prints a value; a zero bar is a warning colour where a zero means something was never done."""
    largest = max(counts.values(), default=0) or 1
    label_width = max([LABEL_WIDTH, *(CHAR_WIDTH * len(name) + 12 for name in names)])
    bars = []
    for i, name in enumerate(names):
        count = counts.get(name, 0)
        bars.append(
            {
                "name": name,
                "y": TOP + i * ROW,
                "width": round(BAR_WIDTH * count / largest),
                "height": ROW - 6,
                "colour": "#4a7bd0" if count or not zero_warns else "#b86e00",  # e.g. an action never taken
                "shown": shown(count),
            }
        )
    template = environment().get_template("bar_chart.svg.j2")
    return Markup(
        template.render(
            title=title,
            bars=bars,
            label_width=label_width,
            width=label_width + BAR_WIDTH + 90,
            height=TOP + ROW * len(names) + 4,
        )
    )
