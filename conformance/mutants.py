"""Deliberately broken implementations, selected by name, to show that the checks catch real bugs.

impl/ stays correct; each mutant here subclasses an impl class and re-creates one known bug class.
`tidemark conform --mutant NAME` replays a spec against a mutant; the tests run the Hypothesis state
machines against them.
"""

from __future__ import annotations

from impl.counter import PartitionUpdateCounter


class NoOutOfOrderTrackingCounter(PartitionUpdateCounter):
    """Update moves LWM to the end of the applied range, ignoring holes (no out-of-order tracking).

    The bug the seed warns about: a copy that applied a later transaction first reports an LWM that
    claims updates it never had, so rebalancing after its restart never restores them.
    """

    def update(self, start: int, delta: int) -> bool:
        if start < self.lwm:
            return False
        self._lwm = start + delta
        return True


COUNTER_MUTANTS: dict[str, type[PartitionUpdateCounter]] = {
    "no-out-of-order-tracking": NoOutOfOrderTrackingCounter,
}
