"""Mermaid for the HTML pages: the browser bundle shipped with the package (conformance/assets/, see its
README), written beside a page that draws sequence diagrams. Pages then read offline: nothing is
fetched from the network, and without JavaScript the diagrams stay readable as their source."""

from __future__ import annotations

import lzma
import uuid
from functools import cache
from pathlib import Path

VERSION = "12.3.0"
BUNDLE = Path(__file__).parent / "assets" / "mermaid.min.js.xz"
SCRIPT = "mermaid.min.js"

# The page's script tags: the bundle, then drawing every <pre class="mermaid"> block on load.
SCRIPT_TAGS = (
    f'<script src="{SCRIPT}"></script>\n'
    '<script>mermaid.initialize({startOnLoad: true, securityLevel: "strict"});</script>\n'
)


@cache
def _script() -> bytes:
    return lzma.decompress(BUNDLE.read_bytes())


def write_mermaid(directory: Path) -> Path:
    """directory/mermaid.min.js (written under a temporary name and renamed; kept if already equal).
    The temporary name is this writer's own: runs side by side write the same directory."""
    script = _script()
    target = directory / SCRIPT
    if target.is_file() and target.stat().st_size == len(script) and target.read_bytes() == script:
        return target
    partial = directory / f".{SCRIPT}.{uuid.uuid4().hex}.partial"
    try:
        partial.write_bytes(script)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target
