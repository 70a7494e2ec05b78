------------------------------- MODULE NCacheZoo -------------------------------
(***************************************************************************)
(* The bug zoo of spec/NCachePartitionReplica.tla: ways to break NCache's  *)
(* partition-replica topology, each a replacement for one operator. A      *)
(* model selects a bug with a TLC definition override in its config, e.g. *)
(*                                                                         *)
(*     CONSTANT Replayed <- NothingReplayed                                *)
(*                                                                         *)
(* so the correct spec stays untouched. `tidemark zoo` (conformance/zoo/entries.py) *)
(* writes those configs, runs TLC on this module and expects a             *)
(* counterexample for each; docs/bugzoo.md and docs/ncache.md explain them.*)
(***************************************************************************)
EXTENDS NCachePartitionReplica

\* 1. The operations logged while a bucket moved are not replayed on the new owner before the switch: a
\*    write acknowledged during the transfer is gone once the new owner serves the bucket.
NothingReplayed(b) == {}

\* 2. The distribution map is not consulted while a bucket is in transfer: its temporary owner serves it,
\*    although the permanent owner holds the data (and the copy it is about to pull overwrites the write).
RouteToTemporary(b) ==
    IF orphan[b] # None THEN orphan[b] ELSE IF temp[b] # None THEN temp[b] ELSE owner[b]

\* 3. The last member's replica stays on itself instead of wrapping to the coordinator: one copy only.
ReplicaHolderNoWrap(x, ms) ==
    IF Len(ms) = 1 THEN None
    ELSE IF IndexIn(ms, x) = Len(ms) THEN x ELSE ms[IndexIn(ms, x) + 1]

\* 4. A leave does not revert the buckets in transfer to the leaver: they keep a departed temporary owner.
NeverReverts(b, x) == FALSE

\* 5. A member back from maintenance serves its buckets without pulling them from its replica: it comes back
\*    with the empty stores it restarted with, and every write of its partition is gone.
NothingPulled(x) == Empty
================================================================================
