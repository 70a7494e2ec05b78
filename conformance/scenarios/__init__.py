"""Scenario files: a cluster, the steps it takes and what must hold, run on an implementation of a protocol.

A scenario is a JSON file (schema: conformance/schemas/scenario.schema.json, generated from
`format.ScenarioFile`)::

    {"name": "figure1-backup-reordering",
     "cluster": {"servers": ["s1", "s2", "s3"], "clients": ["c1"], "partitions": 1, "backups": 2},
     "steps": [{"step": "TxStart", "tx": "t1", "keys": {"1": "v1", "2": "v2"}},
               {"step": "Lock", "tx": "t1", "node": "s1"},
               ...
               {"step": "BackupCommit", "tx": "t2", "node": "s2",
                "expect": {"s2": {"counters": {"0": {"lwm": 0, "items": [[3, 2]]}}}}}],
     "expect": {"s2": {"counters": {"0": {"lwm": 5, "items": []}}, "data": {"1": "v1", ...}}}}

- `protocol`: "2pc" (the default: impl/cluster.py's `Cluster`, the 2PC slice with its atomic Exchange)
  or "pme" (impl/pme.py's `PmeCluster`: the whole protocol, where the exchange runs as SendSingle and
  FullMessage steps, servers Join after a Restart, and MOVING copies rebalance by Supply and Rebalance)
  or "hazelcast" (impl/hazelcast.py's `HazelcastCluster`: puts, backups delivered, lost or failing,
  anti-entropy, replica sync, crashes, joins and migrations; a message is named by what it is about, e.g.
  the backup of put 2 to m2; expectations: a member's `replica` index, per namespace its `versions`,
  `dirty` flag and `entries`, and its free sync `permits`).
- `cluster`: servers, the one client (the model's near node), partitions, backups, optionally the owner
  list of each partition (primary first; default: the first backups+1 servers own every partition) and
  data committed on every owner before the scenario starts; with "pme" also the rebalancing knobs
  `wal_rebalance_threshold` and `batch_size`. Every size has a range (format.py says which and why).
- `steps`: the cluster's steps by their spec names (impl/cluster.py STEPS, impl/pme.py PME_STEPS), each
  delivering one message or taking one local action: TxStart (which also declares the transaction's keys
  and values), Lock, Prepare, BackupPrepare, Commit, BackupCommit, Rollback, NodeFail, Restart, Exchange,
  Checkpoint, ... and for "pme" Join, BaselineChange, SendSingle, FullMessage, Supply, Rebalance, Evict,
  TruncateWal. A step may carry a `note` (shown in the timeline and diagram), an `expect`, a `topology`
  and an `idle_verify` checked right after it; `"refused": true` when it must NOT be possible at that
  point, or `"error": "TooManyGapsError"` when it must fail with that named error (both checked; the run
  goes on from the state before the step).
- `expect`: per node, checked after the last step: `state` (alive, down, restarted), `counters` per
  partition (lwm, hwm, items), `data` (the whole key -> value map), `partitions` (the copy's state),
  `init` (a MOVING copy's initial counter, "pme"), `history` (where the WAL archive was truncated,
  "pme"), `rebalanced` (how the copy was last rebalanced: mode historical or full, the counter range
  from..to and the supplier, "pme") and `txs` (a transaction's state on that server, or on the client).
  `topology`: the topology version, the version whose exchange completed, the owner lists and ("pme")
  the pending events - e.g. the late affinity switch's "affinity" - and the coordinator. `idle_verify`
  ("pme"): what tidemark.impl.pme.idle_verify reports.
- `counter`: "tracking" (Ignite's counter, the default) or a counter mutant of conformance/zoo/mutants.py,
  e.g. "no-out-of-order-tracking" ("2pc" only).

The package, by concern:
- format.py: the file format (pydantic models, bounds, the JSON Schema); protocols.py: what each
  protocol's scenarios may say; load.py: reading a file and the checks pydantic cannot make.
- runner.py: the protocol-neutral runner; adapters/: what runs a scenario (`System`, base.py), per system
  and protocol (impl/cluster.py for "2pc", impl/pme.py for "pme", impl/hazelcast.py for "hazelcast");
  checks.py: the expectation checker.
- result.py: what a run produces (timeline, checks, final state); views/: the terminal table and text
  cells, the Mermaid diagram, the HTML page; outputs.py: the files and the --json summary.
"""

from tidemark.conformance.scenarios.load import load_scenario
from tidemark.conformance.scenarios.outputs import output_paths, scenario_summary, write_outputs
from tidemark.conformance.scenarios.runner import run_scenario
from tidemark.conformance.scenarios.views.text import timeline_table

__all__ = [
    "load_scenario",
    "output_paths",
    "run_scenario",
    "scenario_summary",
    "timeline_table",
    "write_outputs",
]
