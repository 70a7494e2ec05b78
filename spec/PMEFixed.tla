------------------------------ MODULE PMEFixed ------------------------------
(***************************************************************************)
(* spec/PME.tla with proposed fixes for the ways Ignite 2.18 loses         *)
(* acknowledged writes that the models found and a real cluster confirmed  *)
(* (docs/pme.md, section 9; docs/findings/):                               *)
(*                                                                         *)
(*  1. rollback-range-reused: a survivor rolling back a recovered          *)
(*     transaction applies its range (spec/TxCountersFixed.tla);           *)
(*  2. merged-left-keeps-gaps and activation-keeps-gaps: the gaps a node   *)
(*     left leaves on the survivors are closed by finalize at a node-left  *)
(*     exchange only; a node left merged into a join exchange, or a total  *)
(*     outage, leaves them open. A copy's LWM then understates what it     *)
(*     holds: a copy that missed the update above the gap reports the same *)
(*     LWM and is never rebalanced, update(max) fails on the copy with the *)
(*     gap ("Failed to update partition counter") and, as the new primary, *)
(*     it hands out counters it already applied. The fix: an exchange that *)
(*     demotes (a join, a baseline change, an activation) first closes, on *)
(*     every copy, the gaps that no other live copy covers - updates that  *)
(*     exist nowhere -, as finalize would; a gap another copy covers is an *)
(*     update this copy missed, and it stays (the copy is demoted). In     *)
(*     Ignite the coordinator would collect the gaps with the single       *)
(*     messages and send the ones to close back (one more round); the      *)
(*     model reads the other copies' counters in the server's step.        *)
(*                                                                         *)
(* A model selects both with definition overrides (spec/PMEFixed-deep.cfg): *)
(*     CONSTANT RecoveredRollbackCloses <-[TxCounters] ClosingRecoveredRanges *)
(*     CONSTANT GapsClosedAtExchange <- UncoveredGaps                      *)
(* impl.cluster.Fix has the same changes, and conformance replays this     *)
(* module's models on a cluster with both on.                              *)
(***************************************************************************)
EXTENDS PME

ClosingRecoveredRanges == TRUE

\* At an exchange that demotes: the gaps of n's copy of p below its highest applied counter that no other
\* live copy of p covers.
UncoveredGaps(n, p) ==
    IF ~Demote THEN {}
    ELSE {c \in (1..Ctr!HighestApplied(counter[n][p])) \ Ctr!Covered(counter[n][p]) :
              \A o \in alive \ {n} : p \in Copies(o) => c \notin Ctr!Covered(counter[o][p])}

\* With the fixes, no exchange fails to update a counter: when the full message is due, no copy has
\* applied an update above every OWNING copy's LWM.
NoCounterUpdateFailure == (topVer # readyVer /\ alive # {} /\ DOMAIN singles = alive) => UpdateFailures = {}
=============================================================================
