--------------------------- MODULE GapFinalization ---------------------------
(***************************************************************************)
(* finalize(): how the exchange after a server left closes the gaps of a   *)
(* partition's update counter (seed 001, "Restoring consistency";          *)
(* ignite-internals.md, "Partition update counter").                       *)
(*                                                                         *)
(* When a primary fails, the counters it reserved for transactions that    *)
(* never reached a backup leave holes there: the backup applied later      *)
(* ranges out of order and its LWM waits below them forever. Once every    *)
(* transaction of the old topology is released, no update can still fill  *)
(* a hole, so each one is closed: LWM moves over it, a rollback record     *)
(* (start, delta) goes to the WAL so that recovery closes it again, and    *)
(* HWM drops to the new LWM, since a reserved tail above the highest       *)
(* applied counter belongs to no update.                                   *)
(*                                                                         *)
(* Operators only: spec/TxCounters.tla (atomic exchange) and spec/PME.tla  *)
(* (the node's single-message step) apply them to every local copy.        *)
(* impl/counter.py's PartitionUpdateCounter.finalize() is the counterpart. *)
(***************************************************************************)
EXTENDS Naturals, Sequences

LOCAL Ctr == INSTANCE UpdateCounter WITH Copies <- {"c"}, Primary <- "c", MaxCounter <- 0, Deltas <- {1},
                                         MaxMissedUpdates <- 10000, counter <- <<>>, pending <- <<>>,
                                         done <- <<>>, committed <- {}, rolledBack <- {}, rejoined <- {},
                                         primary <- "c", action <- <<>>

\* The holes below the highest applied counter, as ranges <<start, delta>> in counter order.
Holes(ctr) == Ctr!Holes(ctr)

\* The counter after finalize(): no items, LWM = HWM = the highest applied counter.
Finalized(ctr) == Ctr!Finalize(ctr)

\* The rollback records finalize() writes for partition p: one per hole.
GapRecords(p, ctr) ==
    {[type |-> "rollback", part |-> p, start |-> Holes(ctr)[i][1], delta |-> Holes(ctr)[i][2]] :
     i \in 1..Len(Holes(ctr))}
=============================================================================
