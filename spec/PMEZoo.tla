------------------------------- MODULE PMEZoo -------------------------------
(***************************************************************************)
(* The bug zoo: known ways to break the update-counter protocol, each a    *)
(* replacement for one operator of spec/PME.tla (or of the modules it      *)
(* builds on). A model selects a bug with a TLC definition override in its *)
(* config, e.g.                                                            *)
(*                                                                         *)
(*     CONSTANT FullUpdate <- FullUpdateKeepingHwm                         *)
(*     CONSTANT Update <-[UpdateCounter] UpdateWithoutTracking             *)
(*                                                                         *)
(* so the correct spec stays untouched and every bug is one line away.     *)
(* `tidemark zoo` (conformance/zoo/entries.py) writes those configs, runs TLC on   *)
(* this module and expects a counterexample for each; docs/bugzoo.md       *)
(* explains them. It extends spec/PMEFixed.tla so that a bug can also be   *)
(* put into a model of the fixed protocol (the deep models).               *)
(***************************************************************************)
EXTENDS PMEFixed

\* 1. No out-of-order tracking: update(start, delta) moves LWM to the end of the range, over any hole.
UpdateWithoutTracking(ctr, s, d) ==
    IF s < ctr.lwm THEN ctr ELSE [ctr EXCEPT !.lwm = s + d]

\* 2. The full message's update(max LWM) leaves HWM alone: a new primary keeps its stale HWM.
FullUpdateKeepingHwm(ctr, v) == [Ctr!UpdateLwm(ctr, v) EXCEPT !.hwm = ctr.hwm]

\* 3. The exchange finalizes without waiting for the old version's transactions to be released.
ReleasedAtOnce == TRUE

\* 4. The supplier is the oldest OWNING copy, whatever its counter (not one with the maximum LWM).
AnyOwningSupplies(p) == OwningCopies(p)

\* 5. The primary applies its rollback (update and rollback record) before its backups finished.
RollbackFirst(t, n) ==
    /\ LET m == [type |-> "FinishRequest", tx |-> t, to |-> n, commit |-> FALSE]
       IN /\ m \in msgs
          /\ Tx!InState(n, t, "prepared")
          /\ Tx!Reply(m, {[type |-> "DhtFinishRequest", tx |-> t, sender |-> n, to |-> b, commit |-> FALSE] :
                          b \in Tx!DhtNodes(n)})
    /\ Tx!RollbackOn(n, txs[n][t].writes)
    /\ txs' = [txs EXCEPT ![n][t].state = "rollingBack"]
    /\ action' = Tx!Step("Rollback", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, data>>

\* 6. Non-atomic primary switch: the near node maps a transaction with some owner's view of the primary
\*    on the same version - any owner - instead of the one the exchange agreed on.
TxStartAnyOwner(t) ==
    /\ near[t].state = "idle"
    /\ owners # <<>>
    /\ topVer = readyVer
    /\ \E pr \in Range(owners) :
        /\ near' = [near EXCEPT ![t] = [state |-> "locking", ver |-> readyVer, primary |-> pr]]
        /\ Tx!Send({[type |-> "LockRequest", tx |-> t, to |-> pr, ver |-> readyVer]})
    /\ action' = [name |-> "TxStart", tx |-> t]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, txs, counter, data, wal>>

\* 7. Gaps are not persisted: a restarted copy believes it is sequential up to its highest counter.
RestoredSequential(n, p) ==
    LET ctr == Ctr!Summarize(Ctr!NewCounter, 0, Durable(wal[n], p))
    IN IF state[n][p].state = "MOVING"
       THEN [Ctr!NewCounter EXCEPT !.lwm = state[n][p].init, !.hwm = state[n][p].init]
       ELSE [Ctr!NewCounter EXCEPT !.lwm = Ctr!HighestApplied(ctr), !.hwm = Ctr!HighestApplied(ctr)]

\* 8. LWM moves before the update is durable: the commit's data records never reach the WAL.
CommitWalLost(n, t, ws) == wal[n]

\* 9. Historical rebalance although the supplier's WAL no longer reaches back to the demander's counter.
HistoricalIgnoringWal(s, p, c) ==
    /\ c > 0
    /\ EnoughEntries(PartSize(s, p))
    /\ MaxLwm(p) - c < PartSize(s, p)

\* 10. The exchange after a server left demotes nothing, as it should, but also skips finalize().
NeverFinalizes == FALSE

\* 11. A full rebalance starts "after key 0" (an exclusive bound whose start is a real key): key 0 is
\*     never supplied, and the demander owns the partition without it.
FullFirstAfterZero == 1

\* 12. A server left merged into a join exchange finalizes every copy, the joiner's too: the hole of an
\*     update the rejoining copy missed is closed as a rollback, its LWM reaches the maximum, and it stays
\*     OWNING without that update (docs/findings/join-merged-with-left.md).
FinalizesOnAnyLeft == "left" \in pending

\* 13. A RENTING copy assigned again keeps its counter as its rebalancing start: a copy that received the
\*     maximum LWM while MOVING, before its data, is rebalanced from there and owns without the updates
\*     below (docs/findings/moving-renting-moving.md).
ReassignedAtLwm(n, p) == [state |-> "MOVING", init |-> singles[n][p].lwm]

\* 14. Historical rebalance for a partition with exactly the threshold's entries: Ignite requires more
\*     (docs/findings/wal-threshold-strict.md); RebalanceModeAsIgnite states the rule.
EnoughEntriesAtThreshold(size) == size >= WalRebalanceThreshold

\* 15. The activation after a total outage trusts every restored OWNING copy: a copy that missed a commit
\*     before the outage keeps its lower LWM as an owner, and the partition's copies disagree for good.
DemoteWithoutActivation == pending \cap {"joined", "baseline"} # {}
=============================================================================
