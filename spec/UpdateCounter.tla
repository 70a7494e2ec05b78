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
(* The model drives one primary and its backups through what the counter   *)
(* sees in a cluster: the primary reserves ranges at tx prepare; every     *)
(* copy applies them at commit or rollback, in any order, or drops them    *)
(* (a backup whose tx was recovered as a rollback after the primary        *)
(* failed); a copy crashes and restarts from its persisted form (lwm and   *)
(* gaps); and the exchange that follows finalizes the survivors' gaps and  *)
(* sends every copy the maximum LWM of the survivors.                      *)
(*                                                                         *)
(* What it leaves out: keys and data (see TxCounters), messages, the       *)
(* coordinator and partition states (see PME). Ranges here are whole       *)
(* transactions' reservations; the environment only produces inputs that  *)
(* Ignite's 2PC can produce: one outcome per transaction, the primary      *)
(* rolls back only after its backups finished, updates are dropped only    *)
(* by recovery after the primary failed, and one copy always survives.     *)
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
    Copies,     \* the copies of the partition, e.g. {"p", "b"}
    Primary,    \* the copy that reserves counters at tx prepare, e.g. "p"
    MaxCounter, \* bound on reserved counters (the primary's HWM), e.g. 3
    Deltas      \* sizes of reserved ranges (a tx's keys in the partition), e.g. {1, 2}

ASSUME Primary \in Copies /\ MaxCounter \in Nat /\ Deltas \subseteq Nat \ {0}

VARIABLES
    counter,    \* counter[c]: the copy's counter, e.g. [lwm |-> 1, hwm |-> 4, items |-> <<<<2, 1>>>>, first |-> TRUE]
    pending,    \* pending[c]: ranges reserved and not yet applied or dropped on c, e.g. {<<3, 1>>}
    done,       \* done[c]: counters durable or closed on c (ghost, the truth the counter summarizes), e.g. {1, 3}
    committed,  \* ranges some copy applied at commit (their transaction's outcome), e.g. {<<0, 1>>}
    rolledBack, \* ranges some copy rolled back or dropped, e.g. {<<1, 2>>}
    rejoined,   \* copies restarted since the last exchange, e.g. {"b"}
    action      \* the step taken, e.g. [name |-> "Commit", copy |-> "b", start |-> 2, delta |-> 1]

vars == <<counter, pending, done, committed, rolledBack, rejoined, action>>

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

\* reserve(delta) at tx prepare on the primary: the tx owns hwm+1..hwm+delta.
Reserve(ctr, d) == [ctr EXCEPT !.hwm = ctr.hwm + d]

\* update(start, delta) at commit or rollback: stale or already covered ranges change nothing.
Update(ctr, s, d) ==
    IF s < ctr.lwm \/ RangeCounters(<<s, d>>) \cap Covered(ctr) # {} THEN ctr
    ELSE Summarize(ctr, ctr.lwm, ItemCounters(ctr.items) \cup RangeCounters(<<s, d>>))

\* update(value): the absolute LWM from the exchange's full message. It raises HWM; the first one
\* drops the items (rebalancing restores their data). Values below lwm are ignored.
UpdateLwm(ctr, v) ==
    LET hwm == Max({ctr.hwm, v, ctr.lwm})
    IN IF v < ctr.lwm THEN [ctr EXCEPT !.hwm = hwm]
       ELSE [ctr EXCEPT !.hwm = hwm, !.lwm = v, !.first = FALSE,
                        !.items = IF ctr.first THEN <<>> ELSE ctr.items]

\* finalize() at a node-left exchange: gaps closed, HWM drops to the new LWM.
Finalize(ctr) == [ctr EXCEPT !.lwm = HighestApplied(ctr), !.hwm = HighestApplied(ctr), !.items = <<>>]

\* The counter rebuilt on restart from the partition meta page: lwm and persisted gaps.
Restore(ctr) == [lwm |-> ctr.lwm, hwm |-> HighestApplied(ctr), items |-> ctr.items, first |-> TRUE]

-----------------------------------------------------------------------------
(* The cluster around the counter                                           *)

Reserved == UNION {pending[c] : c \in Copies} \cup committed \cup rolledBack
Survivors == Copies \ rejoined
Step(name, c, r) == [name |-> name, copy |-> c, start |-> r[1], delta |-> r[2]]

Init ==
    /\ counter = [c \in Copies |-> NewCounter]
    /\ pending = [c \in Copies |-> {}]
    /\ done = [c \in Copies |-> {}]
    /\ committed = {}
    /\ rolledBack = {}
    /\ rejoined = {}
    /\ action = [name |-> "Init"]

\* Tx prepare on the primary: reserve a range; the prepare request carries it to every backup.
\* No reservation while an exchange is due: new transactions wait for the new topology.
ReserveRange(d) ==
    /\ rejoined = {}
    /\ counter[Primary].hwm + d <= MaxCounter
    /\ LET r == <<counter[Primary].hwm, d>>
       IN /\ counter' = [counter EXCEPT ![Primary] = Reserve(@, d)]
          /\ pending' = [c \in Copies |-> pending[c] \cup {r}]
          /\ action' = Step("Reserve", Primary, r)
    /\ UNCHANGED <<done, committed, rolledBack, rejoined>>

\* Tx commit on copy c: entries written to the WAL, then update(start, delta).
Commit(c, r) ==
    /\ r \in pending[c]
    /\ r \notin rolledBack
    /\ counter' = [counter EXCEPT ![c] = Update(@, r[1], r[2])]
    /\ pending' = [pending EXCEPT ![c] = @ \ {r}]
    /\ done' = [done EXCEPT ![c] = @ \cup RangeCounters(r)]
    /\ committed' = committed \cup {r}
    /\ action' = Step("Commit", c, r)
    /\ UNCHANGED <<rolledBack, rejoined>>

\* Rollback of a prepared tx on copy c: update(start, delta) and a rollback record in the WAL.
\* The primary rolls back only after its backups finished.
Rollback(c, r) ==
    /\ r \in pending[c]
    /\ r \notin committed
    /\ c = Primary => \A b \in Copies \ {Primary} : r \notin pending[b]
    /\ counter' = [counter EXCEPT ![c] = Update(@, r[1], r[2])]
    /\ pending' = [pending EXCEPT ![c] = @ \ {r}]
    /\ done' = [done EXCEPT ![c] = @ \cup RangeCounters(r)]
    /\ rolledBack' = rolledBack \cup {r}
    /\ action' = Step("Rollback", c, r)
    /\ UNCHANGED <<committed, rejoined>>

\* Tx recovery after the primary failed decided rollback: a backup drops the range's counters
\* without applying them; the hole is closed by finalize() at the exchange.
Drop(c, r) ==
    /\ c # Primary
    /\ Primary \in rejoined
    /\ r \in pending[c]
    /\ r \notin committed
    /\ pending' = [pending EXCEPT ![c] = @ \ {r}]
    /\ rolledBack' = rolledBack \cup {r}
    /\ action' = Step("Drop", c, r)
    /\ UNCHANGED <<counter, done, committed, rejoined>>

\* WAL replay of a data record already reflected in the counter: update(i-1, 1) changes nothing.
Replay(c, i) ==
    /\ i \in done[c]
    /\ counter' = [counter EXCEPT ![c] = Update(@, i - 1, 1)]
    /\ action' = Step("Replay", c, <<i - 1, 1>>)
    /\ UNCHANGED <<pending, done, committed, rolledBack, rejoined>>

\* Crash and restart of copy c: in-flight transactions are lost; the counter is restored from its
\* persisted lwm and gaps. At least one copy survives (no partition loss in this model).
Restart(c) ==
    /\ Survivors \ {c} # {}
    /\ counter' = [counter EXCEPT ![c] = Restore(@)]
    /\ pending' = [pending EXCEPT ![c] = {}]
    /\ rejoined' = rejoined \cup {c}
    /\ action' = [name |-> "Restart", copy |-> c]
    /\ UNCHANGED <<done, committed, rolledBack>>

\* The counters every copy brings to the exchange: survivors finalize (a node left), restarted copies
\* bring what they restored from disk.
ExchangeCounters == [c \in Copies |-> IF c \in Survivors THEN Finalize(counter[c]) ELSE counter[c]]

\* The coordinator's value: the maximum LWM among the OWNING copies, the restarted ones included.
ExchangeLwm == Max({ExchangeCounters[c].lwm : c \in Copies})

\* The exchange after the failures, once every transaction is released (the node-left and the
\* node-join exchanges as one step): every copy applies the maximum LWM; counters up to it are durable
\* on the supplier, so a copy lacking some of them gets them by rebalancing.
Exchange ==
    /\ rejoined # {}
    /\ \A c \in Copies : pending[c] = {}
    /\ counter' = [c \in Copies |-> UpdateLwm(ExchangeCounters[c], ExchangeLwm)]
    /\ done' = [c \in Copies |-> done[c] \cup 1..ExchangeLwm]
    /\ action' = [name |-> "Exchange", lwm |-> ExchangeLwm]
    /\ rejoined' = {}
    /\ UNCHANGED <<pending, committed, rolledBack>>

Next ==
    \/ \E d \in Deltas : ReserveRange(d)
    \/ \E c \in Copies, r \in Reserved : Commit(c, r) \/ Rollback(c, r) \/ Drop(c, r)
    \/ \E c \in Copies : \E i \in done[c] : Replay(c, i)
    \/ \E c \in Copies : Restart(c)
    \/ Exchange

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Invariants                                                               *)

TypeOK ==
    /\ \A c \in Copies :
        /\ counter[c].lwm \in Nat /\ counter[c].hwm \in Nat /\ counter[c].first \in BOOLEAN
        /\ \A i \in 1..Len(counter[c].items) : counter[c].items[i][2] > 0
    /\ rejoined \subseteq Copies

\* Items are the out-of-order updates, kept sorted, disjoint, merged and above LWM: otherwise
\* LWM could not advance over them and finalize would report wrong gaps.
ItemsWellFormed ==
    \A c \in Copies :
        LET it == counter[c].items
        IN /\ it # <<>> => it[1][1] > counter[c].lwm
           /\ \A i \in 1..(Len(it) - 1) : it[i + 1][1] > it[i][1] + it[i][2]

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
    \A c \in Copies : (c = Primary \/ action.name = "Exchange") => counter[c].hwm >= counter[c].lwm

\* Right after an exchange no copy has gaps: finalize closed the survivors', the first absolute
\* update dropped the restarted copies'.
NoGapsAfterExchange == action.name = "Exchange" => \A c \in Copies : counter[c].items = <<>>

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
