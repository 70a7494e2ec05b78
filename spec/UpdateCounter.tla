--------------------------- MODULE UpdateCounter ---------------------------
(***************************************************************************)
(* Apache Ignite's partition update counter in persistent mode (class      *)
(* PartitionUpdateCounterTrackingImpl), for the copies of one partition.   *)
(*                                                                         *)
(* A counter is a record [lwm, hwm, items, first]:                        *)
(*   lwm   - low watermark: every update with a counter <= lwm is durable  *)
(*           (applied and in the WAL) or was closed (rolled back, gap      *)
(*           finalized, brought by rebalancing);                           *)
(*   hwm   - high watermark: counters reserved so far (primary only; a     *)
(*           backup's hwm is stale between exchanges);                     *)
(*   items - updates applied out of order, as <<start, delta>> ranges      *)
(*           covering start+1..start+delta, sorted, never adjacent;        *)
(*   first - TRUE until the counter took its first absolute update at a    *)
(*           partition map exchange (PME).                                 *)
(*                                                                         *)
(* The model drives the copies of one partition through what the counter   *)
(* sees in a cluster: the primary reserves ranges at tx prepare; every     *)
(* copy applies them at commit or rollback, in any order, or drops them (a *)
(* backup whose tx was recovered as a rollback after the primary failed);  *)
(* a copy crashes and restarts from its persisted form (lwm and gaps) and  *)
(* replays its WAL; the exchange that follows finalizes the survivors'     *)
(* gaps, sends every copy the maximum LWM and names a survivor primary if  *)
(* the primary failed; an exchange with no failure (a server joined, or    *)
(* late affinity switched the primary) sends the maximum LWM without       *)
(* finalizing and may name any copy primary.                               *)
(*                                                                         *)
(* What each operation returns is part of the step (`action`), so          *)
(* conformance compares it too: the start reserve hands out, update's      *)
(* boolean (result "applied" or "ignored", or "too many gaps" where Ignite *)
(* throws at the gap limit), the gaps finalize closes.                     *)
(*                                                                         *)
(* What it leaves out: keys and data (see TxCounters), messages, the       *)
(* coordinator and partition states (see PME). Ranges here are whole       *)
(* transactions' reservations; the environment only produces inputs that   *)
(* Ignite's 2PC can produce: one outcome per transaction, the primary      *)
(* rolls back only after its backups finished, updates are dropped only by *)
(* recovery after the primary failed, and one copy survives a crash.       *)
(* Invalid arguments (delta <= 0, a range that partly overlaps the applied *)
(* counters, malformed persisted bytes) never occur in a model, so         *)
(* conformance never passes them to the implementation: its argument       *)
(* checks are covered by unit tests (tests/test_counter.py).               *)
(*                                                                         *)
(* The counter operators (Reserve, Update, UpdateLwm, Finalize, Restore)   *)
(* say WHAT the counter must compute, over sets of counters; impl/counter.py*)
(* says HOW (Ignite's merging of ranges). Conformance replays every edge   *)
(* of this model's state graph against the implementation.                 *)
(*                                                                         *)
(* Where Ignite's code and the seed article differ: the article says LWM   *)
(* "catches up HWM" at commit; in Ignite a backup never raises its HWM     *)
(* outside an exchange, so HWM >= LWM only holds on the primary and right  *)
(* after an exchange (invariant HwmCoversLwm).                             *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    Copies,           \* the copies of the partition, e.g. {"p", "b"}
    Primary,          \* the copy that is primary at first, e.g. "p"
    MaxCounter,       \* bound on reserved counters (the primary's HWM), e.g. 4
    Deltas,           \* sizes of reserved ranges (a tx's keys in the partition), e.g. {1, 2}
    MaxMissedUpdates  \* the gap limit: Ignite's MAX_MISSED_UPDATES (10000); a model uses 1 or 2

ASSUME /\ Primary \in Copies /\ MaxCounter \in Nat /\ Deltas \subseteq Nat \ {0}
       /\ MaxMissedUpdates \in Nat \ {0}

VARIABLES
    counter,    \* counter[c]: the copy's counter, e.g. [lwm |-> 1, hwm |-> 4, items |-> <<<<2, 1>>>>, first |-> TRUE]
    pending,    \* pending[c]: ranges reserved and not yet applied or dropped on c, e.g. {<<3, 1>>}
    done,       \* done[c]: counters durable or closed on c (ghost, the truth the counter summarizes), e.g. {1, 3}
    committed,  \* ranges some copy applied at commit (their transaction's outcome) and still pending
                \*   on another copy, e.g. {<<0, 1>>}
    rolledBack, \* ranges some copy rolled back or dropped and still pending on another, e.g. {<<1, 2>>}
    rejoined,   \* copies restarted since the last exchange, e.g. {"b"}
    primary,    \* the copy that reserves counters at tx prepare, e.g. "p"
    action      \* the step taken and what it returned,
                \*   e.g. [name |-> "Commit", copy |-> "b", start |-> 2, delta |-> 1, result |-> "applied"]

vars == <<counter, pending, done, committed, rolledBack, rejoined, primary, action>>

-----------------------------------------------------------------------------
(* Helpers over sets of counters and ranges                                 *)

Max(S) == CHOOSE x \in S : \A y \in S : x >= y
Min(S) == CHOOSE x \in S : \A y \in S : x <= y

RangeCounters(r) == (r[1] + 1)..(r[1] + r[2])

RECURSIVE SortedSeq(_)
SortedSeq(S) == IF S = {} THEN <<>> ELSE <<Min(S)>> \o SortedSeq(S \ {Min(S)})

\* The ranges <<start, delta>> that cover a set of counters: maximal runs, in order.
Runs(S) ==
    LET firsts == SortedSeq({x \in S : x - 1 \notin S})
        Last(x) == CHOOSE y \in S : y >= x /\ x..y \subseteq S /\ y + 1 \notin S
    IN [i \in 1..Len(firsts) |-> <<firsts[i] - 1, Last(firsts[i]) - firsts[i] + 1>>]

ItemCounters(items) == UNION {RangeCounters(items[i]) : i \in 1..Len(items)}

-----------------------------------------------------------------------------
(* The counter operators (Ignite's PartitionUpdateCounter API)              *)

NewCounter == [lwm |-> 0, hwm |-> 0, items |-> <<>>, first |-> TRUE]

Covered(ctr) == (1..ctr.lwm) \cup ItemCounters(ctr.items)

HighestApplied(ctr) ==
    IF ctr.items = <<>> THEN ctr.lwm
    ELSE ctr.items[Len(ctr.items)][1] + ctr.items[Len(ctr.items)][2]

\* The counter whose covered counters are 1..lwm plus S: LWM moves over the sequential prefix.
Summarize(ctr, lwm, S) ==
    LET newLwm == CHOOSE m \in lwm..(lwm + Cardinality(S)) :
                      (lwm + 1)..m \subseteq S /\ m + 1 \notin S
    IN [ctr EXCEPT !.lwm = newLwm, !.items = Runs({x \in S : x > newLwm})]

\* reserve(delta) at tx prepare on the primary: the tx owns hwm+1..hwm+delta; it returns hwm.
Reserve(ctr, d) == [ctr EXCEPT !.hwm = ctr.hwm + d]

\* What update(start, delta) returns: TRUE for a range at or above LWM that the copy lacks entirely.
\* A stale range (start below LWM) is ignored whatever its end, as Ignite does.
Applied(ctr, s, d) == s >= ctr.lwm /\ RangeCounters(<<s, d>>) \cap Covered(ctr) = {}

\* update(start, delta) at commit or rollback: stale or already covered ranges change nothing. A range
\* that partly overlaps the counters the copy holds is no input 2PC produces (a range is applied whole
\* or not at all); Ignite would corrupt its queue, the implementation raises ValueError, and TLC stops
\* here should a model ever produce one.
Update(ctr, s, d) ==
    IF Applied(ctr, s, d)
    THEN Summarize(ctr, ctr.lwm, ItemCounters(ctr.items) \cup RangeCounters(<<s, d>>))
    ELSE IF s < ctr.lwm \/ RangeCounters(<<s, d>>) \subseteq Covered(ctr) THEN ctr
    ELSE Assert(FALSE, "update(start, delta): the range partly overlaps the applied counters")

\* update(start, delta) throws "Too many gaps" (Ignite fails the node) when MaxMissedUpdates ranges are
\* queued and the range would be one more, or - Ignite checks the limit before it looks for an item
\* starting there - when it starts exactly where a queued item starts, though it changes nothing.
TooManyGaps(ctr, s, d) ==
    /\ Len(ctr.items) >= MaxMissedUpdates
    /\ \/ Len(Update(ctr, s, d).items) > Len(ctr.items)
       \/ \E i \in 1..Len(ctr.items) : ctr.items[i][1] = s

\* The outcome of update(start, delta) as a step records it.
UpdateResult(ctr, s, d) ==
    IF TooManyGaps(ctr, s, d) THEN "too many gaps" ELSE IF Applied(ctr, s, d) THEN "applied" ELSE "ignored"

\* update(value): the absolute LWM from the exchange's full message. It raises HWM; the first one
\* drops the items (rebalancing restores their data). Values below lwm are ignored.
UpdateLwm(ctr, v) ==
    LET hwm == Max({ctr.hwm, v, ctr.lwm})
    IN IF v < ctr.lwm THEN [ctr EXCEPT !.hwm = hwm]
       ELSE [ctr EXCEPT !.hwm = hwm, !.lwm = v, !.first = FALSE,
                        !.items = IF ctr.first THEN <<>> ELSE ctr.items]

\* finalize() at a node-left exchange: gaps closed, HWM drops to the new LWM.
Finalize(ctr) == [ctr EXCEPT !.lwm = HighestApplied(ctr), !.hwm = HighestApplied(ctr), !.items = <<>>]

\* The holes finalize() closes, as ranges <<start, delta>> in counter order.
Holes(ctr) == Runs((1..HighestApplied(ctr)) \ Covered(ctr))

\* What finalize() returns: each hole as the pair <<first, last>> of its counters.
Gaps(ctr) == [i \in 1..Len(Holes(ctr)) |-> <<Holes(ctr)[i][1] + 1, Holes(ctr)[i][1] + Holes(ctr)[i][2]>>]

\* The counter rebuilt on restart from the partition meta page: lwm and persisted gaps.
Restore(ctr) == [lwm |-> ctr.lwm, hwm |-> HighestApplied(ctr), items |-> ctr.items, first |-> TRUE]

-----------------------------------------------------------------------------
(* The cluster around the counter                                           *)

Pending == UNION {pending[c] : c \in Copies}

\* A decided outcome is kept while its range is pending on some copy: a range applied or dropped
\* everywhere constrains no further step, and forgetting it keeps equal counters in equal states.
Remember(outcomes) == {r \in outcomes : \E c \in Copies : r \in pending'[c]}
Survivors == Copies \ rejoined
Step(name, c, r) == [name |-> name, copy |-> c, start |-> r[1], delta |-> r[2]]

\* An update step and what update(start, delta) returned, or that it threw.
UpdateStep(name, c, r) ==
    [name |-> name, copy |-> c, start |-> r[1], delta |-> r[2], result |-> UpdateResult(counter[c], r[1], r[2])]

Init ==
    /\ counter = [c \in Copies |-> NewCounter]
    /\ pending = [c \in Copies |-> {}]
    /\ done = [c \in Copies |-> {}]
    /\ committed = {}
    /\ rolledBack = {}
    /\ rejoined = {}
    /\ primary = Primary
    /\ action = [name |-> "Init"]

\* Tx prepare on the primary: reserve a range; the prepare request carries it to every backup.
\* No reservation while an exchange is due: new transactions wait for the new topology.
ReserveRange(d) ==
    /\ rejoined = {}
    /\ counter[primary].hwm + d <= MaxCounter
    /\ LET r == <<counter[primary].hwm, d>>
       IN /\ counter' = [counter EXCEPT ![primary] = Reserve(@, d)]
          /\ pending' = [c \in Copies |-> pending[c] \cup {r}]
          /\ action' = Step("Reserve", primary, r)
    /\ UNCHANGED <<done, committed, rolledBack, rejoined, primary>>

\* Copy c applies range r: its update(start, delta) changes the counter, and the range is durable. When
\* the update throws "Too many gaps" nothing changes: Ignite's failure handler then stops the node, which
\* the model leaves to a later Restart (so the copy may take other steps first, and the last copy alive
\* stays up with the range pending).
ApplyRange(c, r) ==
    IF TooManyGaps(counter[c], r[1], r[2])
    THEN UNCHANGED <<counter, pending, done>>
    ELSE /\ counter' = [counter EXCEPT ![c] = Update(@, r[1], r[2])]
         /\ pending' = [pending EXCEPT ![c] = @ \ {r}]
         /\ done' = [done EXCEPT ![c] = @ \cup RangeCounters(r)]

\* The transaction's outcome, once copy c applied its range r (unless its update threw).
Decided(c, r, outcomes) ==
    outcomes' = Remember(IF TooManyGaps(counter[c], r[1], r[2]) THEN outcomes ELSE outcomes \cup {r})

\* Tx commit on copy c: entries written to the WAL, then update(start, delta).
Commit(c, r) ==
    /\ r \in pending[c]
    /\ r \notin rolledBack
    /\ ApplyRange(c, r)
    /\ Decided(c, r, committed)
    /\ rolledBack' = Remember(rolledBack)
    /\ action' = UpdateStep("Commit", c, r)
    /\ UNCHANGED <<rejoined, primary>>

\* Rollback of a prepared tx on copy c: update(start, delta) and a rollback record in the WAL.
\* The primary rolls back only after its backups finished.
Rollback(c, r) ==
    /\ r \in pending[c]
    /\ r \notin committed
    /\ c = primary => \A b \in Copies \ {primary} : r \notin pending[b]
    /\ ApplyRange(c, r)
    /\ Decided(c, r, rolledBack)
    /\ committed' = Remember(committed)
    /\ action' = UpdateStep("Rollback", c, r)
    /\ UNCHANGED <<rejoined, primary>>

\* Tx recovery after the primary failed decided rollback: a backup drops the range's counters
\* without applying them; the hole is closed by finalize() at the exchange.
Drop(c, r) ==
    /\ c # primary
    /\ primary \in rejoined
    /\ r \in pending[c]
    /\ r \notin committed
    /\ pending' = [pending EXCEPT ![c] = @ \ {r}]
    /\ rolledBack' = Remember(rolledBack \cup {r})
    /\ committed' = Remember(committed)
    /\ action' = Step("Drop", c, r)
    /\ UNCHANGED <<counter, done, rejoined, primary>>

\* WAL replay, on a copy recovering from a restart (before it rejoins at the exchange), of a data record
\* already reflected in the counter: update(i-1, 1) changes nothing (at the gap limit it may throw
\* instead, see TooManyGaps).
Replay(c, i) ==
    /\ c \in rejoined
    /\ i \in done[c]
    /\ action' = UpdateStep("Replay", c, <<i - 1, 1>>)
    /\ UNCHANGED <<counter, pending, done, committed, rolledBack, rejoined, primary>>

\* Crash and restart of copy c: in-flight transactions are lost; the counter is restored from its
\* persisted lwm and gaps. At least one copy survives (no partition loss in this model).
Restart(c) ==
    /\ Survivors \ {c} # {}
    /\ counter' = [counter EXCEPT ![c] = Restore(@)]
    /\ pending' = [pending EXCEPT ![c] = {}]
    /\ rejoined' = rejoined \cup {c}
    /\ committed' = Remember(committed)
    /\ rolledBack' = Remember(rolledBack)
    /\ action' = [name |-> "Restart", copy |-> c]
    /\ UNCHANGED <<done, primary>>

\* The counters every copy brings to the exchange: survivors finalize (a node left), restarted copies
\* bring what they restored from disk.
ExchangeCounters == [c \in Copies |-> IF c \in Survivors THEN Finalize(counter[c]) ELSE counter[c]]

\* The coordinator's value: the maximum LWM among the OWNING copies, the restarted ones included.
ExchangeLwm == Max({ExchangeCounters[c].lwm : c \in Copies})

\* The exchange after the failures, once every transaction is released (the node-left and the
\* node-join exchanges as one step): every copy applies the maximum LWM; counters up to it are durable
\* on the supplier, so a copy lacking some of them gets them by rebalancing. If the primary failed, a
\* survivor becomes primary (its HWM was just raised to at least the maximum LWM).
Exchange(np) ==
    /\ rejoined # {}
    /\ \A c \in Copies : pending[c] = {}
    /\ np \in IF primary \in Survivors THEN {primary} ELSE Survivors
    /\ counter' = [c \in Copies |-> UpdateLwm(ExchangeCounters[c], ExchangeLwm)]
    /\ done' = [c \in Copies |-> done[c] \cup 1..ExchangeLwm]
    /\ primary' = np
    /\ action' = [name |-> "Exchange", lwm |-> ExchangeLwm, primary |-> np,
                  gaps |-> [c \in Survivors |-> Gaps(counter[c])]]
    /\ rejoined' = {}
    /\ UNCHANGED <<pending, committed, rolledBack>>

\* An exchange without a failure (a server joined, or late affinity moved the primary back), once every
\* transaction is released: no finalize; every copy applies the maximum LWM, which raises the backups'
\* stale HWM; any copy may be primary afterwards.
JoinExchange(np) ==
    /\ rejoined = {}
    /\ \A c \in Copies : pending[c] = {}
    /\ LET lwm == Max({counter[c].lwm : c \in Copies})
       IN /\ counter' = [c \in Copies |-> UpdateLwm(counter[c], lwm)]
          /\ action' = [name |-> "JoinExchange", lwm |-> lwm, primary |-> np]
    /\ primary' = np
    /\ UNCHANGED <<pending, done, committed, rolledBack, rejoined>>

Next ==
    \/ \E d \in Deltas : ReserveRange(d)
    \/ \E c \in Copies, r \in Pending : Commit(c, r) \/ Rollback(c, r) \/ Drop(c, r)
    \/ \E c \in Copies : \E i \in done[c] : Replay(c, i)
    \/ \E c \in Copies : Restart(c)
    \/ \E c \in Copies : Exchange(c) \/ JoinExchange(c)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Invariants                                                               *)

TypeOK ==
    /\ \A c \in Copies :
        /\ counter[c].lwm \in Nat /\ counter[c].hwm \in Nat /\ counter[c].first \in BOOLEAN
        /\ \A i \in 1..Len(counter[c].items) : counter[c].items[i][2] > 0
    /\ rejoined \subseteq Copies
    /\ primary \in Copies

\* Items are the out-of-order updates, kept sorted, disjoint, merged and above LWM: otherwise
\* LWM could not advance over them and finalize would report wrong gaps.
ItemsWellFormed ==
    \A c \in Copies :
        LET it == counter[c].items
        IN /\ it # <<>> => it[1][1] > counter[c].lwm
           /\ \A i \in 1..(Len(it) - 1) : it[i + 1][1] > it[i][1] + it[i][2]

\* The gap limit holds: no copy ever queues more than MaxMissedUpdates ranges.
ItemsWithinLimit == \A c \in Copies : Len(counter[c].items) <= MaxMissedUpdates

\* LWM never passes the highest applied update.
LwmBelowHighestApplied == \A c \in Copies : counter[c].lwm <= HighestApplied(counter[c])

\* LWM is what rebalancing compares: every counter up to it must really be durable or closed,
\* else a copy with an equal LWM could miss updates and never be rebalanced.
LwmIsDurable == \A c \in Copies : 1..counter[c].lwm \subseteq done[c]

\* The counter summarizes exactly what the copy holds: nothing lost, nothing invented.
CounterIsExact == \A c \in Copies : Covered(counter[c]) = done[c]

\* HWM >= LWM: counters the primary hands out are above everything applied. Ignite guarantees it
\* on the primary and, on every copy, right after an exchange - not on a backup in between.
HwmCoversLwm ==
    \A c \in Copies :
        (c = primary \/ action.name \in {"Exchange", "JoinExchange"}) => counter[c].hwm >= counter[c].lwm

\* Right after an exchange no copy has gaps: finalize closed the survivors', the first absolute
\* update dropped the restarted copies'.
NoGapsAfterExchange ==
    action.name \in {"Exchange", "JoinExchange"} => \A c \in Copies : counter[c].items = <<>>

\* An exchange never sends a copy a value below its highest applied counter: Ignite's update(value)
\* fails the node there ("Failed to update the counter"), as the copy holds updates no supplier has.
\* Holds with two copies; with three, a backup that rolled back a later range out of order and then
\* restarted breaks it (see docs/counter.md).
ExchangeCoversEveryCopy ==
    (rejoined # {} /\ \A c \in Copies : pending[c] = {}) =>
        \A c \in Copies : ExchangeLwm >= HighestApplied(ExchangeCounters[c]) \/ ExchangeLwm < ExchangeCounters[c].lwm

\* Replaying a WAL record that is already reflected changes nothing (idempotent recovery).
ReplayIsNoop == [][action'.name = "Replay" => counter' = counter]_vars
=============================================================================
