---------------------------- MODULE HazelcastZoo ----------------------------
(***************************************************************************)
(* The bug zoo of spec/HazelcastAntiEntropy.tla: known ways to break       *)
(* Hazelcast's replica versions and anti-entropy, most of them bugs        *)
(* Hazelcast fixed (the pull request is named), each a replacement for one *)
(* operator. A model selects a bug with a TLC definition override in its   *)
(* config, e.g.                                                            *)
(*                                                                         *)
(*     CONSTANT Stale <- NeverStale                                        *)
(*                                                                         *)
(* so the correct spec stays untouched and every bug is one line away.     *)
(* `tidemark zoo` (conformance/zoo/entries.py) writes those configs, runs TLC on   *)
(* this module and expects a counterexample for each; docs/bugzoo.md       *)
(* explains them.                                                          *)
(***************************************************************************)
EXTENDS HazelcastAntiEntropy

\* 1. hazelcast#7759: a backup runs without the stale check - a reordered older backup overwrites newer
\*    data (after a sync, or after the newer backup itself).
NeverStale(f, vec, r) == FALSE

\* 2. hazelcast#9205: on a jump the backup is applied and a sync requested, but the versions stay behind,
\*    so the backups still in flight look new and overwrite newer data.
UpdateKeepingVersionsOnJump(f, vec, r) ==
    IF vec[r] - f.v[r] > 1 THEN [f EXCEPT !.dirty = TRUE]
    ELSE IF f.v[r] < vec[r] THEN [f EXCEPT !.v = CopyFrom(f.v, vec, r)] ELSE f

\* 3. A jump is applied without marking the fragment dirty (the replicated map's missing "stale" flag,
\*    hazelcast#8517): the skipped update is forgotten once the versions match.
UpdateWithoutDirty(f, vec, r) == IF f.v[r] < vec[r] THEN [f EXCEPT !.v = CopyFrom(f.v, vec, r)] ELSE f

\* 4. hazelcast#4174: a backup that failed still sets the versions - the replica claims data it lacks.
FailedAdvancing(f, vec, r) == IF f.v[r] < vec[r] THEN [f EXCEPT !.v = CopyFrom(f.v, vec, r)] ELSE f

\* 5. hazelcast#4724: the promoted owner keeps its vectors as they were (no shift) - the replicas it
\*    inherits from its old index are measured against versions it never had.
NoShift(vec, c) == vec

\* 6. hazelcast#16837: clearing a request gives a permit back for every namespace named, also for a
\*    request that timed out (and gave its permit back then) - the pool grows past
\*    max.parallel.replications.
PermitsBackPerNamespace(m, nss, r) == Cardinality(nss)

\* 7. hazelcast#10775: an owner with no fragment left sends no anti-entropy operation, so its backups
\*    never drop a destroyed map's versions.
SendsWithFragments(kept) == DOMAIN kept # {}

\* 8. The owner increments only as many slots as the cluster has backups (capped at members - 1), not
\*    the requested count: a replica beyond that keeps a version equal to the owner's while missing data.
LiveBackups == Min2(BackupCount, Cardinality(alive) - 1)
=============================================================================
