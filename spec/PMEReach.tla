------------------------------ MODULE PMEReach ------------------------------
(***************************************************************************)
(* Which boundary situations a model of spec/PME.tla reaches - the states  *)
(* where data-loss bugs hid because no model went there. A model checked   *)
(* with CONSTRAINT RecordReach prints each situation the first time a      *)
(* worker reaches it ("tidemark-reached"); conformance/deep.py reads them  *)
(* for the verify report. The constraint is always TRUE: it prunes nothing.*)
(* conformance/reach.py states the same predicates over the implementation *)
(* (the campaign). Extends the bug zoo (and so the fixes) so that any of   *)
(* their models can record too.                                            *)
(***************************************************************************)
EXTENDS PMEZoo

Boundaries == <<"key 0", "size == threshold", "merged join+left", "RENTING->MOVING", "two failures",
                "total outage">>

FullMessageDue == topVer # readyVer /\ alive # {} /\ DOMAIN singles = alive

Reached(i) ==
    CASE i = 1 -> \E n \in Servers : \E r \in wal[n] : r.type = "data" /\ r.key = 0
      [] i = 2 -> \E m \in rebal : m.type = "Demand" /\ PartSize(m.to, m.part) = WalRebalanceThreshold
      [] i = 3 -> FullMessageDue /\ {"joined", "left"} \subseteq pending
      [] i = 4 -> FullMessageDue /\ \E n \in DOMAIN singles, p \in Parts :
                      p \in DOMAIN singles[n] /\ singles[n][p].state = "RENTING"
                      /\ ExchangeState(n, p).state = "MOVING"
      [] i = 5 -> crashes >= 2
      [] i = 6 -> ~active

\* TLC's registers are per worker: each prints a situation at most once.
ASSUME \A i \in 1..Len(Boundaries) : TLCSet(i, FALSE)
RecordReach ==
    \A i \in 1..Len(Boundaries) :
        (~TLCGet(i) /\ Reached(i)) => (TLCSet(i, TRUE) /\ PrintT(<<"tidemark-reached", Boundaries[i]>>))

\* The bounded deep check CI runs (tests/test_deep.py): behaviors of at most this many steps.
CiBound == TLCGet("level") <= 14
=============================================================================
