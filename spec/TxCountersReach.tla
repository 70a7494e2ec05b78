--------------------------- MODULE TxCountersReach ---------------------------
(***************************************************************************)
(* spec/PMEReach.tla's boundary situations for spec/TxCounters.tla models: *)
(* the ones this slice has (no rebalancing, joins, baseline or outage).    *)
(***************************************************************************)
EXTENDS TxCountersFixed

Boundaries == <<"key 0", "two failures">>

Reached(i) ==
    CASE i = 1 -> \E n \in Servers : \E r \in wal[n] : r.type = "data" /\ r.key = 0
      [] i = 2 -> Cardinality(Servers \ alive) >= 2  \* a restarted server does not rejoin here

ASSUME \A i \in 1..Len(Boundaries) : TLCSet(i, FALSE)
RecordReach ==
    \A i \in 1..Len(Boundaries) :
        (~TLCGet(i) /\ Reached(i)) => (TLCSet(i, TRUE) /\ PrintT(<<"tidemark-reached", Boundaries[i]>>))

\* The state without the step that led to it: no action reads `action`.
WithoutAction == <<alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal, msgs>>
=============================================================================
