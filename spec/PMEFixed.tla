------------------------------ MODULE PMEFixed ------------------------------
(***************************************************************************)
(* spec/PME.tla with proposed fixes for the ways Ignite 2.18 loses         *)
(* acknowledged writes that the models found and a real cluster confirmed  *)
(* (docs/pme.md, section 9; docs/findings/):                               *)
(*                                                                         *)
(*  1. rollback-range-reused: a survivor rolling back a recovered          *)
(*     transaction applies its range (spec/TxCountersFixed.tla), and the   *)
(*     full message raises every updated copy's HWM to the highest counter *)
(*     any copy applied (the single messages would carry it): a range a    *)
(*     copy closed above its LWM is never handed out again;                *)
(*  2. merged-left-keeps-gaps and activation-keeps-gaps: the gaps a node   *)
(*     left leaves on the survivors are closed by finalize at a node-left  *)
(*     exchange only; a node left merged into a join exchange, or a total  *)
(*     outage, leaves them open. A copy's LWM then understates what it     *)
(*     holds: a copy that missed the update above the gap reports the same *)
(*     LWM and is never rebalanced, update(max) fails on the copy with the *)
(*     gap ("Failed to update partition counter") and, as the new primary, *)
(*     it hands out counters it already applied. The fix: an exchange that *)
(*     demotes (a join, a baseline change, an activation) first closes, on *)
(*     every copy of a partition that stays, the gaps for which no other  *)
(*     live server logged an update - updates that exist nowhere -, as     *)
(*     finalize would; a gap another server has the update for is an      *)
(*     update this copy missed, and it stays (the copy is demoted).        *)
(*     Closing writes rollback records, never data records, so the        *)
(*     servers' decisions do not depend on their order. In Ignite the      *)
(*     coordinator would collect the gaps and the applied counters with    *)
(*     the single messages and send the ones to close back (one more       *)
(*     round); the model reads the other servers' WALs in the server's     *)
(*     step.                                                               *)
(*                                                                         *)
(* A model selects them with definition overrides (spec/PMEFixed-deep.cfg): *)
(*     CONSTANT RecoveredRollbackCloses <-[TxCounters] ClosingRecoveredRanges *)
(*              HwmFloor <- HighestAppliedAnywhere                         *)
(*              GapsClosedAtExchange <- UncoveredGaps                      *)
(* tidemark.impl.cluster.Fix has the same changes, and conformance replays this     *)
(* module's models on a cluster with every fix on.                         *)
(***************************************************************************)
EXTENDS PME

ClosingRecoveredRanges == TRUE

\* The highest counter any copy in the single messages applied: the floor of every HWM the full message
\* updates.
HighestAppliedAnywhere(p) ==
    Max({0} \cup {Ctr!HighestApplied(counter[n][p]) : n \in {o \in DOMAIN singles : p \in Copies(o)}})

\* At an exchange that demotes, in a partition that stays (not LOST: an OWNING copy of a server that was
\* in the topology before the exchange): the gaps of n's copy of p below its highest applied counter for
\* which no other live server logged an update of p. (In a LOST partition the update may be on a server
\* that is down, and nothing moves.)
UncoveredGaps(n, p) ==
    IF ~Demote \/ p \in AlreadyLost \/ \A o \in alive \ joiners : StateOf(o, p) # "OWNING" THEN {}
    ELSE LET logged == {r.cntr : r \in {r \in UNION {wal[o] : o \in alive \ {n}} :
                                            r.type = "data" /\ Part(r.key) = p}}
         IN ((1..Ctr!HighestApplied(counter[n][p])) \ Ctr!Covered(counter[n][p])) \ logged

=============================================================================
