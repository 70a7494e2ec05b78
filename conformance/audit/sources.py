"""Snapshots of clusters tidemark runs itself: the model's (impl.pme) and a real Ignite's (the harness).

Both become the same table, the snapshot format of docs/audit.md, so the audit of either can be put beside
that cluster's own idle_verify: the model's tidemark.impl.pme.idle_verify, or Ignite's (tests/test_audit.py,
tests/test_audit_ignite.py).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import pyarrow as pa

from tidemark.impl.idle_verify import missed, missed_text
from tidemark.impl.pme import PmeCluster

SCHEMA: Final = pa.schema(
    [
        ("node", pa.string()),
        ("group", pa.string()),
        ("partition", pa.int32()),
        ("state", pa.string()),
        ("primary", pa.bool_()),
        ("lwm", pa.int64()),
        ("gaps", pa.string()),
        ("hwm", pa.int64()),
        ("key", pa.int32()),
        ("value", pa.binary()),
        ("version", pa.int64()),
        ("version_topology", pa.int32()),
        ("version_node", pa.int32()),
    ]
)
_NO_ENTRY: Final = {
    "key": None,
    "value": None,
    "version": None,
    "version_topology": None,
    "version_node": None,
}


def _copy_rows(copy: dict[str, Any], entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**copy, **e} for e in entries] or [{**copy, **_NO_ENTRY}]


def model_snapshot(cluster: PmeCluster, group: str = "tidemark") -> pa.Table:
    """Every live server's copies: Integer keys, the writing transaction's name (UTF-8) as the value, the
    update's counter as the version (what impl.pme.idle_verify hashes); copies of LOST partitions LOST."""
    rows = []
    for node in sorted(cluster.alive):
        n = cluster.nodes[node]
        for part, copy in sorted(cluster.states[node].items()):
            ctr = n.counters.get(part)
            lwm, items, hwm = (ctr.lwm, ctr.items, ctr.highest_applied) if ctr is not None else (0, [], 0)
            head = {
                "node": node,
                "group": group,
                "partition": part,
                "state": "LOST" if part in cluster.lost else copy.state.value,
                "primary": cluster.owners[part][:1] == (node,),
                "lwm": lwm,
                "gaps": missed_text(missed(lwm, items)),
                "hwm": hwm,
            }
            entries = [
                {
                    "key": k,
                    "value": e.tx.encode(),
                    "version": e.cntr,
                    "version_topology": 0,
                    "version_node": 0,
                }
                for k, e in sorted(n.data.items())
                if cluster.config.partition(k) == part
            ]
            rows += _copy_rows(head, entries)
    return pa.Table.from_pylist(rows, schema=SCHEMA)


_COUNTER = re.compile(r"\[lwm=(\d+), missed=(\[[^\]]*\]), hwm=(\d+)\]")


def ignite_snapshot(answer: Mapping[str, Any], group: str = "tidemark") -> pa.Table:
    """The harness's `snapshot` answer (per server, its copies with the counter's comparable text and the
    entries as stored: Integer key, value bytes, version) as a snapshot table."""
    rows = []
    for node, copies in sorted(answer.items()):
        for c in copies:
            # A partition never written has no counter yet: Ignite reports updateCntr=0 for it.
            counter = _COUNTER.fullmatch(
                "[lwm=0, missed=[], hwm=0]" if c["comparable"] == "0" else c["comparable"]
            )
            if counter is None:
                raise ValueError(f"{node} partition {c['partition']}: counter {c['comparable']!r}")
            head = {
                "node": node,
                "group": group,
                "partition": c["partition"],
                "state": c["state"],
                "primary": c["primary"],
                "lwm": int(counter.group(1)),
                "gaps": counter.group(2),
                "hwm": int(counter.group(3)),
            }
            entries = []
            for key, value, topology, node_order, order, expire in c["entries"]:
                if expire:  # idle_verify does not hash entries that expire: none in the harness's cache
                    raise ValueError(f"{node} partition {c['partition']}: key {key} expires")
                entries.append(
                    {
                        "key": int(key),
                        "value": base64.b64decode(value),
                        "version": order,
                        "version_topology": topology,
                        "version_node": node_order,
                    }
                )
            rows += _copy_rows(head, entries)
    return pa.Table.from_pylist(rows, schema=SCHEMA)
