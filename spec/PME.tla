-------------------------------- MODULE PME --------------------------------
(***************************************************************************)
(* The whole partition-consistency protocol of Apache Ignite with          *)
(* persistence: 2PC counter assignment (spec/TxCounters.tla), topology     *)
(* changes, partition map exchange (PME) with gap finalization             *)
(* (spec/GapFinalization.tla) and counter-based rebalancing (seed 001,     *)
(* "Restoring consistency", "Crash recovery", "Importance of atomic        *)
(* primaries switching"; ignite-internals.md, "Partition map exchange",    *)
(* "Rebalancing").                                                         *)
(*                                                                         *)
(* Topology: a server fails (NodeFail), restarts from its disk (Restart)   *)
(* and joins again (Join); the operator may set the baseline to the live   *)
(* servers (BaselineChange). With persistence the affinity is computed     *)
(* over the baseline: the owners of a partition are the first Backups+1    *)
(* baseline servers (s1, s2, ... : the seed's F(0)); a failed owner's copy *)
(* waits on its disk, nothing moves to other servers until the baseline    *)
(* changes.                                                                *)
(*                                                                         *)
(* The exchange for a new topology version: each live server learns of the *)
(* event on its own schedule (SendSingle); it waits until its transactions *)
(* of the old version are released, finalizes its counters if a server     *)
(* left, and sends the coordinator its single message: per copy its LWM,   *)
(* state and how far back its WAL can supply. The coordinator (the oldest *)
(* live server by join order) takes per partition the maximum LWM among    *)
(* OWNING copies;                                                          *)
(* on a join or baseline change it demotes lagging OWNING copies to        *)
(* MOVING (not on a plain node left), creates MOVING copies on new owners, *)
(* marks copies that left the assignment RENTING, picks a supplier for     *)
(* each MOVING copy (historical from the WAL or full) and sends the full   *)
(* message; every server applies it in the same step (FullMessage):        *)
(* update(max) on OWNING and MOVING copies - which raises a new primary's  *)
(* HWM - the new states, and the new owner list. A partition without an    *)
(* OWNING copy on a server that was in the topology before is LOST: writes *)
(* to it fail (READ_WRITE_SAFE and READ_ONLY_SAFE agree for write-only     *)
(* transactions).                                                          *)
(*                                                                         *)
(* Rebalancing: the demander asks (Demand), the supplier answers a batch   *)
(* (Supply), the demander applies it (Rebalance) and asks for the next;    *)
(* the last batch makes the copy OWNING. A RENTING copy is evicted once no *)
(* copy of its partition is MOVING. A server may truncate its WAL archive  *)
(* (TruncateWal); history it offered or that rebalancing uses is reserved. *)
(*                                                                         *)
(* Simplifications beyond TxCounters':                                     *)
(*  - every partition shares one owner list; its order puts servers whose  *)
(*    copies are all OWNING first (Ignite's late affinity assignment keeps *)
(*    a MOVING copy from being primary, per partition); when rebalancing   *)
(*    ends, the switch back to the ideal order is an exchange on a new     *)
(*    minor version, as Ignite's late affinity switch;                     *)
(*  - the full message is applied by all servers in one step: no server   *)
(*    acts on the new version before it applied it, and no transaction of *)
(*    the old version is left, so nothing can observe the moment between; *)
(*  - a topology event cancels rebalancing (Ignite restarts it after the   *)
(*    next exchange); a copy that is MOVING keeps its initial counter;     *)
(*  - the model writes no deletes, so the full rebalance's clearing of the *)
(*    demander is replaced by "a supplied entry overwrites an older one";  *)
(*  - a rebalanced copy logs its entries and, when done, a record that its *)
(*    counter up to LWM is durable (Ignite checkpoints a rebalanced        *)
(*    partition before it becomes OWNING); a MOVING copy restarts from its *)
(*    initial counter (persisted in the partition meta);                   *)
(*  - LOST partitions are never reset (resetLostPartitions is an operator  *)
(*    command outside the protocol);                                       *)
(*  - the coordinator is, as in Ignite, the oldest live server by join     *)
(*    order (a server that fails and rejoins is the youngest); the exchange *)
(*    is one step of all servers, so no decision depends on which server   *)
(*    coordinates, but the full message is its step.                      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    ServerCount,          \* servers s1 .. sN, e.g. 3
    Backups,              \* backups per partition, e.g. 2
    Partitions,           \* partitions 0 .. Partitions-1; key k is in partition k % Partitions, e.g. 1
    TxKeys,               \* the key sets of the transactions t1, t2, ... by smallest key, keys below 65536
                          \*   (spec/TxCounters.tla, Part), e.g. {{0}, {1}}
    MaxFailures,          \* server crashes allowed in a behavior, e.g. 1
    BaselineAutoAdjust,   \* may the operator set the baseline to the live servers? e.g. FALSE
    WalRebalanceThreshold,\* historical rebalance only for partitions with more entries than this, e.g. 0
    BatchSize,            \* entries per supply message, e.g. 2
    WalTruncation,        \* may servers truncate their WAL archive (history for rebalancing)? e.g. FALSE
    Checkpoints,          \* may servers checkpoint (persist their counters' meta)? e.g. FALSE
    FailAfterDecisions    \* does a server crash only once the client decided every started transaction?
                          \*   A bound that keeps targeted models small, e.g. FALSE

ASSUME /\ BaselineAutoAdjust \in BOOLEAN /\ WalRebalanceThreshold \in Nat /\ BatchSize \in Nat \ {0}
       /\ WalTruncation \in BOOLEAN /\ Checkpoints \in BOOLEAN /\ FailAfterDecisions \in BOOLEAN

VARIABLES
    alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal, msgs, action,
                \* as in spec/TxCounters.tla; wal also holds [type |-> "rebalanced", part |-> p, lwm |-> l]
    state,      \* state[n]: partition -> the copy's state and initial counter (persisted with it),
                \*   e.g. (0 :> [state |-> "MOVING", init |-> 2]); no entry: no copy (EVICTED)
    baseline,   \* the baseline servers, e.g. {"s1", "s2", "s3"}
    lost,       \* LOST partitions, e.g. {}
    pending,    \* the kinds of topology events since readyVer, e.g. {"left", "joined"}
    singles,    \* the single messages the coordinator has for topVer: server -> partition -> record,
                \*   e.g. ("s2" :> (0 :> [lwm |-> 3, state |-> "OWNING", hist |-> 0]))
    rebal,      \* rebalancing messages in flight (Demand, Supply), e.g. {[type |-> "Demand", part |-> 0,
                \*   sender |-> "s1", to |-> "s2", mode |-> "historical", first |-> 3, upto |-> 3]}
    crashes,    \* server crashes so far, e.g. 1
    joiners,    \* servers that joined since readyVer (their copies are not yet vouched for), e.g. {"s1"}
    history,    \* history[n][p]: the WAL archive holds p's records above this counter only, e.g. ("s1" :> (0 :> 2))
    joinOrder,  \* the live servers, oldest first (Ignite's node order): the first coordinates,
                \*   e.g. <<"s2", "s3", "s1">> after s1 failed and rejoined
    active,     \* FALSE from the moment every server is down until the activation, e.g. TRUE
    ckpt        \* ckpt[n]: the counters' meta (LWM and gaps per partition) of n's last checkpoint,
                \*   e.g. ("s1" :> (0 :> [lwm |-> 3, items |-> <<>>])); <<>> before the first

txVars == <<alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal, msgs, action>>
pmeVars == <<state, baseline, lost, pending, singles, rebal, crashes, joiners, history, joinOrder, active, ckpt>>
vars == <<txVars, pmeVars>>

Tx == INSTANCE TxCounters
Fin == INSTANCE GapFinalization
Ctr == INSTANCE UpdateCounter WITH Copies <- {"c"}, Primary <- "c", MaxCounter <- 0, Deltas <- {1},
                                   MaxMissedUpdates <- 10000, pending <- <<>>, done <- <<>>,
                                   committed <- {}, rolledBack <- {}, rejoined <- {}, primary <- "c"

Servers == Tx!Servers
Parts == Tx!Parts
Txs == Tx!Txs
Part(k) == Tx!Part(k)
Max(S) == Tx!Max(S)
Range(seq) == Tx!Range(seq)
Index(n) == CHOOSE i \in 1..ServerCount : Tx!Server(i) = n

-----------------------------------------------------------------------------
(* Helpers                                                                  *)

Copies(n) == DOMAIN state[n]
StateOf(n, p) == IF p \in Copies(n) THEN state[n][p].state ELSE "EVICTED"
Owning == [state |-> "OWNING", init |-> 0]

\* The affinity over the baseline: its first Backups+1 servers in index order, and the live ones.
IdealOwners(b) == LET inBaseline == SelectSeq([i \in 1..ServerCount |-> Tx!Server(i)], LAMBDA s : s \in b)
                  IN SubSeq(inBaseline, 1, IF Len(inBaseline) < Backups + 1 THEN Len(inBaseline) ELSE Backups + 1)

\* The live servers of the assignment, in its order.
Assigned == SelectSeq(IdealOwners(baseline), LAMBDA s : s \in alive)

\* Writes to a LOST partition fail; a transaction writing one never starts.
Writable(t) == {Part(k) : k \in Tx!Writes[t]} \cap lost = {}

\* The counters of partition p that WAL records make durable: data, rollback and rebalanced records.
Durable(recs, p) ==
    {r.cntr : r \in {r \in recs : r.type = "data" /\ Part(r.key) = p}}
    \cup UNION {Ctr!RangeCounters(<<r.start, r.delta>>) : r \in {r \in recs : r.type = "rollback" /\ r.part = p}}
    \cup UNION {1..r.lwm : r \in {r \in recs : r.type = "rebalanced" /\ r.part = p}}

\* How far back n's WAL can supply partition p up to LWM l: the truncated history, or the highest
\* counter <= l it lacks (0: all).
HistFrom(n, recs, p, l) == Max({history[n][p]} \cup {c \in 1..l : c \notin Durable(recs, p)})

\* The counters' meta a checkpoint of n writes now: LWM and gaps of every counter in memory.
Meta(n) == [p \in DOMAIN counter[n] |-> [lwm |-> counter[n][p].lwm, items |-> counter[n][p].items]]

\* A copy rebuilt from the disk: an OWNING or RENTING copy starts from its last checkpoint's meta (none:
\* 0) and replays the WAL (data, rollback and rebalanced records; HWM = highest applied), a MOVING copy
\* restarts from its initial counter. Ignite replays the records after the checkpoint's marker; those
\* before it are reflected in the meta (an exchange's absolute update drops gaps only up to the new LWM,
\* see FullUpdate), so replaying them changes nothing and the model replays every record. The meta
\* matters where the counter moved without a record: update(max) raised LWM over counters no update used.
RestoredCounter(n, p) ==
    LET base == IF p \in DOMAIN ckpt[n] THEN ckpt[n][p] ELSE [lwm |-> 0, items |-> <<>>]
        above == {c \in Durable(wal[n], p) : c > base.lwm}
    IN IF state[n][p].state = "MOVING"
       THEN [Ctr!NewCounter EXCEPT !.lwm = state[n][p].init, !.hwm = state[n][p].init]
       ELSE Ctr!Restore(Ctr!Summarize(Ctr!NewCounter, base.lwm, Ctr!ItemCounters(base.items) \cup above))
RestoredData(n) == [k \in {k \in DOMAIN Tx!RestoredData(n) : Part(k) \in Copies(n)} |-> Tx!RestoredData(n)[k]]

\* The owner list for copy states st: the assignment's servers whose copies are all OWNING first (late
\* affinity assignment: a server still rebalancing is no primary), in the assignment's order.
OwnerOrder(st, list) ==
    LET ready(s) == \A p \in Parts : p \in DOMAIN st[s] /\ st[s][p].state = "OWNING"
    IN SelectSeq(list, ready) \o SelectSeq(list, LAMBDA s : ~ready(s))

\* A topology event: a new version, the exchange's messages and rebalancing of the old one cancelled.
NewVersion(ver, kind) ==
    /\ topVer' = ver
    /\ pending' = pending \cup {kind}
    /\ singles' = <<>>
    /\ rebal' = {}

Step(name, n) == [name |-> name, node |-> n]
PartStep(name, n, p) == [name |-> name, node |-> n, part |-> p]

-----------------------------------------------------------------------------
(* Initial state                                                            *)

Init ==
    /\ Tx!Init
    /\ state = [n \in Servers |-> [p \in Tx!OwnedParts(n) |-> Owning]]
    /\ baseline = Servers
    /\ lost = {}
    /\ pending = {}
    /\ singles = <<>>
    /\ rebal = {}
    /\ crashes = 0
    /\ joiners = {}
    /\ history = [n \in Servers |-> [p \in Parts |-> 0]]
    /\ joinOrder = [i \in 1..ServerCount |-> Tx!Server(i)]
    /\ active = TRUE
    /\ ckpt = [n \in Servers |-> <<>>]

-----------------------------------------------------------------------------
(* Transactions: spec/TxCounters.tla's steps, on writable partitions        *)

\* The primary locks (and so prepares) only keys of its OWNING copies: a MOVING copy lacks data and its HWM
\* is that of the last exchange. Ignite's late affinity assignment keeps an OWNING copy primary per
\* partition, and the primary refuses the request otherwise (the near node retries); the model's one
\* owner list may put a server with a MOVING copy first when no server has all its copies OWNING, and
\* the request then waits until the copy owns or the topology changes (LockRemap). The copy cannot leave
\* OWNING while the lock is held (the exchange waits for it), so prepare finds it OWNING too.
PrimaryOwning(t, n) == \A k \in Tx!Writes[t] : StateOf(n, Part(k)) = "OWNING"

\* A locking transaction whose partition became LOST fails on the near node (Ignite's lock future fails
\* with the partition's loss), and is rolled back like one whose primary left.
TxFailsOnLost(t) ==
    /\ near[t].state = "locking"
    /\ ~Writable(t)
    /\ near' = [near EXCEPT ![t].state = "rolledBack"]
    /\ msgs' = {m \in msgs : m.tx # t}
    /\ action' = [name |-> "TxRollback", tx |-> t]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, txs, counter, data, wal>>

TxStep ==
    /\ \/ \E t \in Txs : /\ Writable(t) /\ (Tx!TxStart(t) \/ Tx!TxRemap(t))
       \/ \E t \in Txs : TxFailsOnLost(t)
       \/ \E t \in Txs : Tx!TxPrepare(t) \/ Tx!TxCommit(t) \/ Tx!TxRollback(t) \/ Tx!Recover(t)
       \/ \E t \in Txs, n \in alive :
            \/ Tx!Lock(t, n) /\ PrimaryOwning(t, n)
            \/ Tx!LockRemap(t, n) \/ Tx!Prepare(t, n) \/ Tx!Prepared(t, n)
            \/ Tx!Commit(t, n) \/ Tx!Rollback(t, n) \/ Tx!RolledBack(t, n)
            \/ Tx!BackupPrepare(t, n) \/ Tx!BackupCommit(t, n) \/ Tx!BackupRollback(t, n)
    /\ UNCHANGED pmeVars

-----------------------------------------------------------------------------
(* Topology events                                                          *)

\* A server crashes: memory lost, disk (WAL, partition states, checkpoint) kept, messages to it lost; the
\* near node fails the lock futures mapped to it (its lock responses are dropped); a new major version
\* whose exchange will finalize counters (a server left). The last server down: the cluster is inactive.
NodeFail(n) ==
    /\ n \in alive
    /\ crashes < MaxFailures
    /\ FailAfterDecisions => \A t \in Txs : near[t].state \in {"idle", "committed", "rolledBack"}
    /\ alive' = alive \ {n}
    /\ txs' = [txs EXCEPT ![n] = <<>>]
    /\ data' = [data EXCEPT ![n] = <<>>]
    /\ counter' = [counter EXCEPT ![n] = <<>>]
    /\ msgs' = {m \in msgs : Tx!Receiver(m) # n /\ ~(m.type = "LockResponse" /\ m.sender = n)}
    /\ crashes' = crashes + 1
    /\ joiners' = joiners \ {n}
    /\ joinOrder' = SelectSeq(joinOrder, LAMBDA s : s # n)
    /\ active' = (active /\ alive' # {})
    /\ NewVersion(<<topVer[1] + 1, 0>>, "left")
    /\ action' = Step("NodeFail", n)
    /\ UNCHANGED <<restarted, readyVer, owners, near, wal, state, baseline, lost, history, ckpt>>

\* A crashed server starts again: its copies rebuilt from its disk. It is not in the topology yet.
Restart(n) ==
    /\ n \in Servers \ (alive \cup restarted)
    /\ restarted' = restarted \cup {n}
    /\ counter' = [counter EXCEPT ![n] = [p \in Copies(n) |-> RestoredCounter(n, p)]]
    /\ data' = [data EXCEPT ![n] = RestoredData(n)]
    /\ action' = Step("Restart", n)
    /\ UNCHANGED <<alive, topVer, readyVer, owners, near, txs, wal, msgs, pmeVars>>

\* The restarted server joins the topology: a new major version whose exchange demotes lagging copies.
\* It joins once the previous exchange completed (exchanges run one after another; Ignite merges a join
\* into a running exchange that allows it), so the node-left exchange and its tx recovery see the old
\* incarnation gone. An inactive cluster runs no exchange: the server only enters the topology, once the
\* near node has recovered the transactions of servers that left (it learns of a node left at once).
Join(n) ==
    /\ n \in restarted
    /\ IF active THEN topVer = readyVer ELSE \A t \in Txs : ~Tx!RecoveryDue(t)
    /\ alive' = alive \cup {n}
    /\ restarted' = restarted \ {n}
    /\ joinOrder' = Append(joinOrder, n)
    /\ IF active
       THEN /\ joiners' = joiners \cup {n}
            /\ NewVersion(<<topVer[1] + 1, 0>>, "joined")
       ELSE UNCHANGED <<joiners, topVer, pending, singles, rebal>>
    /\ action' = Step("Join", n)
    /\ UNCHANGED <<readyVer, owners, near, txs, counter, data, wal, msgs, state, baseline, lost, crashes,
                   history, active, ckpt>>

\* Every baseline server is back after a total outage: the operator (or baseline auto-activation)
\* activates the cluster. The activation exchange (a new major version) restores the persisted copies,
\* demotes lagging OWNING copies like a join and finalizes nothing; it decides the LOST partitions afresh
\* (Ignite keeps no LOST mark across a cluster restart: a partition is LOST again only if no OWNING copy
\* is back; AlreadyLost).
Activate ==
    /\ ~active
    /\ alive # {}
    /\ baseline \subseteq alive
    /\ active' = TRUE
    /\ joiners' = {}
    /\ topVer' = <<topVer[1] + 1, 0>>
    /\ pending' = {"activate"}
    /\ singles' = <<>>
    /\ rebal' = {}
    /\ action' = [name |-> "Activate"]
    /\ UNCHANGED <<alive, restarted, readyVer, owners, near, txs, counter, data, wal, msgs, state, baseline,
                   lost, crashes, history, joinOrder, ckpt>>

\* The operator (or baseline auto-adjust) sets the baseline to the live servers: a minor version whose
\* exchange moves partitions to the new affinity.
BaselineChange ==
    /\ BaselineAutoAdjust
    /\ active
    /\ baseline # alive
    /\ baseline' = alive
    /\ NewVersion(<<topVer[1], topVer[2] + 1>>, "baseline")
    /\ action' = [name |-> "BaselineChange"]
    /\ UNCHANGED <<alive, restarted, readyVer, owners, near, txs, counter, data, wal, msgs, state, lost, crashes,
                   joiners, history, joinOrder, active, ckpt>>

-----------------------------------------------------------------------------
(* The exchange                                                             *)

\* Partition release: a server's transactions of the old version finish, then a latch across the
\* servers (Ignite's exchange latch) and a second local wait catch a transaction whose prepare request
\* reached it after its first wait - together: no server holds an old transaction, and no tx recovery
\* is due.
Released == \A t \in Txs : ~Tx!RecoveryDue(t) /\ \A m \in alive : ~Tx!HasActive(m, t)

\* Counters are finalized at an exchange that began with a server left. Ignite finalizes at the exchange's
\* init, and only for the events it began with: a node left merged into a running join exchange (Join
\* starts an exchange only when none runs, so "joined" \in pending means the exchange began with it)
\* finalizes nothing - the rejoining copy's holes must not be closed as rollbacks, it is demoted instead.
\* A node-left or baseline exchange that a further server left restarts stands for Ignite's exchanges run
\* one after the other, the last of which finalizes. (Ignite's exchange-free switch after a node left on a
\* fully rebalanced cluster finalizes only the partitions the failed server was primary for; the model
\* finalizes every copy once every transaction is released, which closes nothing in the others: their
\* live primary finished every counter it reserved. docs/pme.md, section 2.)
FinalizesCounters == "left" \in pending /\ "joined" \notin pending

\* The gaps of n's copy of p that the exchange closes besides finalize (as rollback records, HWM kept):
\* none in Ignite. spec/PMEFixed.tla closes, at an exchange that demotes, the gaps no other live copy
\* covers - updates that exist nowhere, which a node left merged into a join, or a total outage, leaves
\* unfinalized.
GapsClosedAtExchange(n, p) == {}

\* The copy with the counters of S closed as rollbacks, and the rollback records that close them.
Closed(ctr, S) == Ctr!Summarize(ctr, ctr.lwm, Ctr!ItemCounters(ctr.items) \cup S)
ClosingRecords(p, S) ==
    {[type |-> "rollback", part |-> p, start |-> r[1], delta |-> r[2]] : r \in Range(Ctr!Runs(S))}

\* A server learns of the new version; once partitions are released it finalizes its counters if a
\* server left (GapFinalization: holes closed, logged as rollback records) and sends the coordinator
\* its single message.
SendSingle(n) ==
    /\ active
    /\ n \in alive
    /\ topVer # readyVer
    /\ n \notin DOMAIN singles
    /\ Released
    /\ LET finalize == FinalizesCounters
           closes(p) == GapsClosedAtExchange(n, p)
           ctr == [p \in Copies(n) |-> IF finalize THEN Fin!Finalized(counter[n][p])
                                       ELSE IF closes(p) = {} THEN counter[n][p]
                                       ELSE Closed(counter[n][p], closes(p))]
           log == IF finalize THEN wal[n] \cup UNION {Fin!GapRecords(p, counter[n][p]) : p \in Copies(n)}
                  ELSE wal[n] \cup UNION {ClosingRecords(p, closes(p)) : p \in Copies(n)}
       IN /\ counter' = [counter EXCEPT ![n] = ctr]
          /\ wal' = [wal EXCEPT ![n] = log]
          /\ singles' = singles @@ (n :> [p \in Copies(n) |->
                            [lwm |-> ctr[p].lwm, state |-> state[n][p].state, hist |-> HistFrom(n, log, p, ctr[p].lwm)]])
    /\ action' = Step("SendSingle", n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, txs, data, msgs,
                   state, baseline, lost, pending, rebal, crashes, joiners, history, joinOrder, active, ckpt>>

\* The coordinator: the oldest live server (Ignite's oldest node by join order).
Coordinator == joinOrder[1]

\* The coordinator's decision for partition p, from the single messages. A partition is LOST when no
\* server that was in the topology at readyVer has an OWNING copy: a copy that comes back with a server
\* vouches for nothing on its own (it may lack what the owners that left had).
OwningCopies(p) == {n \in DOMAIN singles : p \in DOMAIN singles[n] /\ singles[n][p].state = "OWNING"}
MaxLwm(p) == Max({0} \cup {singles[n][p].lwm : n \in OwningCopies(p)})

\* The counter the full message carries for p, which every OWNING and MOVING copy takes (update(max)): the
\* maximum LWM of every copy reported, MOVING and RENTING ones included (Ignite's collectUpdateCounters
\* over the single messages; only the demotions and the suppliers look at OWNING copies alone). A MOVING
\* copy that closed a range - it applied a rollback its OWNING peers never received - thus raises the new
\* primary's HWM above that range.
FullCounter(p) == Max({0} \cup {singles[n][p].lwm : n \in {o \in DOMAIN singles : p \in DOMAIN singles[o]}})

\* A floor the full message puts under every updated copy's HWM besides the counter: none in Ignite.
\* spec/PMEFixed.tla raises it to the highest counter any copy applied, so that a new primary never hands
\* out a range a copy closed (a rolled-back range above that copy's LWM).
HwmFloor(p) == 0
RaisedHwm(ctr, f) == IF f > ctr.hwm THEN [ctr EXCEPT !.hwm = f] ELSE ctr
Suppliers(p) == {n \in OwningCopies(p) : singles[n][p].lwm = MaxLwm(p)}
PartSize(n, p) == Cardinality({k \in DOMAIN data[n] : Part(k) = p})

\* A partition big enough for WAL rebalancing: more entries than the threshold (strictly: Ignite reserves
\* history only for partitions with fullSize() > threshold).
EnoughEntries(size) == size > WalRebalanceThreshold

\* Historical rebalance from supplier s to a copy at counter c: the copy is not empty (Ignite never
\* rebalances a demander at counter 0 from history), s's WAL reaches back to c, the partition is big
\* enough and the missing updates are fewer than its entries.
Historical(s, p, c) ==
    /\ c > 0
    /\ singles[s][p].hist <= c
    /\ EnoughEntries(PartSize(s, p))
    /\ MaxLwm(p) - c < PartSize(s, p)

\* The supplier for a copy at counter c: the first (oldest) max-LWM owner that can supply from its WAL,
\* else the first max-LWM owner (full rebalance).
First(S) == CHOOSE n \in S : \A o \in S : Index(n) <= Index(o)
SupplierFor(p, c) ==
    IF \E s \in Suppliers(p) : Historical(s, p, c) THEN First({s \in Suppliers(p) : Historical(s, p, c)})
    ELSE First(Suppliers(p))

\* Where a full rebalance starts: the smallest key. Positions are inclusive lower bounds because 0 is a
\* real key (an exclusive "keys above 0" start never sent key 0).
FullFirst == 0

\* The full message's update(max LWM) on a copy (Ignite's update(long)): it raises HWM too (a new
\* primary's). A value at or above LWM but below the copy's highest applied counter fails: Ignite logs
\* "Failed to update partition counter" (UpdateFailures) and carries on with HWM raised, LWM and gaps kept.
CounterUpdateFails(ctr, v) == v >= ctr.lwm /\ v < Ctr!HighestApplied(ctr)
FullUpdate(ctr, v) ==
    IF CounterUpdateFails(ctr, v) THEN [ctr EXCEPT !.hwm = Max({ctr.hwm, v, ctr.lwm})] ELSE Ctr!UpdateLwm(ctr, v)

\* A RENTING copy assigned again: Ignite turns it MOVING and clears it (or, evicted meanwhile, creates
\* it anew); either way its counter is not trusted and it is rebalanced in full, as a new copy. (Its LWM
\* may be a maximum it received while MOVING, before it had the data.)
Reassigned(n, p) == [state |-> "MOVING", init |-> 0]

\* The partitions an exchange finds LOST already: none at the activation after a total outage.
AlreadyLost == IF "activate" \in pending THEN {} ELSE lost

\* The state of n's copy of p after the exchange (Evicted: no copy).
Evicted == [state |-> "EVICTED", init |-> 0]
NewState(n, p, assigned, demote) ==
    IF p \in AlreadyLost \/ OwningCopies(p) \subseteq joiners THEN IF p \in Copies(n) THEN state[n][p] ELSE Evicted
    ELSE IF n \notin assigned THEN IF p \in Copies(n) THEN [state |-> "RENTING", init |-> 0] ELSE Evicted
    ELSE IF p \notin Copies(n) THEN [state |-> "MOVING", init |-> 0]
    ELSE IF singles[n][p].state = "MOVING" THEN state[n][p]
    ELSE IF singles[n][p].state = "RENTING" THEN Reassigned(n, p)
    ELSE IF ~(demote /\ singles[n][p].lwm < MaxLwm(p)) THEN Owning
    ELSE [state |-> "MOVING", init |-> singles[n][p].lwm]

\* The coordinator's decision: demotion on a join, baseline change or activation; LOST partitions; the
\* state of every copy after the exchange.
Demote == pending \cap {"joined", "baseline", "activate"} # {}
NowLost == {p \in Parts : OwningCopies(p) \subseteq joiners}
ExchangeState(n, p) == NewState(n, p, Range(Assigned), Demote)

\* What the exchange reports (Ignite logs it; nothing in the protocol acts on it), read where the full
\* message is due: the copies whose update(max LWM) fails (a copy applied updates above every OWNING
\* copy's LWM: a node with the latest data is out of the topology, or reused counters), and Ignite's
\* partition state validation - the partitions whose OWNING copies, just-joined servers and empty copies
\* left out, reported different LWMs ("update counters are inconsistent") or sizes ("cache sizes are
\* inconsistent").
UpdateFailures ==
    {np \in (DOMAIN singles) \X (Parts \ (AlreadyLost \cup NowLost)) :
        LET n == np[1] p == np[2]
        IN /\ p \in Copies(n) /\ ExchangeState(n, p).state \in {"OWNING", "MOVING"}
           /\ CounterUpdateFails(counter[n][p], FullCounter(p))}
Validated(p) == {n \in DOMAIN singles \ joiners :
                    /\ p \in Copies(n) /\ ExchangeState(n, p).state = "OWNING"
                    /\ (singles[n][p].lwm > 0 \/ PartSize(n, p) > 0)}
CountersInconsistent ==
    {p \in Parts \ (AlreadyLost \cup NowLost) : Cardinality({singles[n][p].lwm : n \in Validated(p)}) > 1}
SizesInconsistent ==
    {p \in Parts \ (AlreadyLost \cup NowLost) : Cardinality({PartSize(n, p) : n \in Validated(p)}) > 1}

\* Every live server sent its single message: the coordinator sends the full message and every server
\* applies it at once - new states, update(max LWM) on OWNING and MOVING copies (this raises a new
\* primary's HWM above every counter in use), demands for the MOVING copies, the new owner list
\* (servers whose copies are all OWNING first) - and transactions map on the new version.
FullMessage ==
    /\ topVer # readyVer
    /\ alive # {}
    /\ DOMAIN singles = alive
    /\ LET new == [n \in alive |-> [p \in Parts |-> ExchangeState(n, p)]]
           copies(n) == {p \in Parts : new[n][p].state # "EVICTED"}
           nowLost == NowLost
           live == Parts \ (AlreadyLost \cup nowLost)  \* a LOST partition waits for the operator: nothing moves
           moving == {<<n, p>> \in alive \X live : new[n][p].state = "MOVING"}
           ctr(n, p) == IF p \in Copies(n) THEN counter[n][p] ELSE Ctr!NewCounter
       IN /\ state' = [n \in Servers |-> IF n \in alive THEN [p \in copies(n) |-> new[n][p]] ELSE state[n]]
          /\ counter' = [n \in Servers |->
                           IF n \notin alive THEN counter[n]
                           ELSE [p \in copies(n) |->
                                   IF p \in live /\ new[n][p].state \in {"OWNING", "MOVING"}
                                   THEN RaisedHwm(FullUpdate(ctr(n, p), FullCounter(p)), HwmFloor(p))
                                   ELSE ctr(n, p)]]
          /\ rebal' = {LET p == nm[2]
                           init == new[nm[1]][p].init
                           s == SupplierFor(p, init)
                           hist == Historical(s, p, init)
                       IN [type |-> "Demand", part |-> p, sender |-> nm[1], to |-> s,
                           mode |-> IF hist THEN "historical" ELSE "full",
                           first |-> IF hist THEN init + 1 ELSE FullFirst, upto |-> MaxLwm(p)] : nm \in moving}
          /\ lost' = AlreadyLost \cup nowLost
          /\ owners' = OwnerOrder(state', Assigned)
    /\ readyVer' = topVer
    /\ pending' = {}
    /\ singles' = <<>>
    /\ joiners' = {}
    /\ action' = Step("FullMessage", Coordinator)
    /\ UNCHANGED <<alive, restarted, topVer, near, txs, data, wal, msgs, baseline, crashes, history, joinOrder,
                   active, ckpt>>

-----------------------------------------------------------------------------
(* Rebalancing                                                              *)

\* The entries a demand asks n for, each with its position: historical - n's WAL data records of p with
\* counters from m.first up to m.upto still in its archive, by counter; full - n's entries of p with keys
\* from m.first on, by key.
SupplyPool(n, p, m) ==
    IF m.mode = "historical"
    THEN {[key |-> r.key, tx |-> r.tx, cntr |-> r.cntr, pos |-> r.cntr] :
          r \in {r \in wal[n] : r.type = "data" /\ Part(r.key) = p /\ r.cntr <= m.upto
                                /\ r.cntr >= Max({m.first, history[n][p] + 1})}}
    ELSE {[key |-> k, tx |-> data[n][k].tx, cntr |-> data[n][k].cntr, pos |-> k] :
          k \in {k \in DOMAIN data[n] : Part(k) = p /\ k >= m.first}}

\* The supplier answers a demand with the next batch (the BatchSize lowest positions of the pool); the
\* next demand asks from the position after the batch's last.
Supply(n, p, d) ==
    /\ \E m \in rebal :
        /\ m.type = "Demand" /\ m.to = n /\ m.part = p /\ m.sender = d
        /\ LET pool == SupplyPool(n, p, m)
               batch == {e \in pool : Cardinality({o \in pool : o.pos <= e.pos}) <= BatchSize}
           IN rebal' = (rebal \ {m}) \cup
                       {[type |-> "Supply", part |-> p, sender |-> n, to |-> d, mode |-> m.mode,
                         entries |-> {[key |-> e.key, tx |-> e.tx, cntr |-> e.cntr] : e \in batch},
                         last |-> batch = pool, upto |-> m.upto,
                         first |-> Max({m.first} \cup {e.pos + 1 : e \in batch})]}
    /\ action' = [name |-> "Supply", node |-> n, part |-> p, peer |-> d]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal, msgs,
                   state, baseline, lost, pending, singles, crashes, joiners, history, joinOrder, active, ckpt>>

\* The demander applies a batch: entries newer than its own (logged to its WAL); after the last batch
\* its counter is durable up to LWM (logged) and the copy is OWNING, else it asks for the next batch.
\* When the last rebalancing of the version ends and the owner order changes (a server that caught up
\* moves back to its place in the assignment, possibly first), the late affinity switch starts an
\* exchange on a new minor version: the primary changes only there, where update(max) raises the new
\* primary's HWM.
Rebalance(n, p) ==
    /\ \E m \in rebal :
        /\ m.type = "Supply" /\ m.to = n /\ m.part = p
        /\ LET newer == {e \in m.entries : e.key \notin DOMAIN data[n] \/ data[n][e.key].cntr < e.cntr}
               best == {e \in newer : \A o \in newer : o.key = e.key => o.cntr <= e.cntr}
               done == IF m.last THEN {[type |-> "rebalanced", part |-> p, lwm |-> counter[n][p].lwm]} ELSE {}
           IN /\ data' = [data EXCEPT ![n] = [k \in DOMAIN @ \cup {e.key : e \in best} |->
                            IF \E e \in best : e.key = k
                            THEN LET e == CHOOSE e \in best : e.key = k IN [tx |-> e.tx, cntr |-> e.cntr]
                            ELSE @[k]]]
              /\ wal' = [wal EXCEPT ![n] = @ \cup done \cup
                           {[type |-> "data", key |-> e.key, tx |-> e.tx, cntr |-> e.cntr] : e \in best}]
              /\ IF m.last
                 THEN LET owned == [state EXCEPT ![n][p] = Owning]
                          switch == rebal = {m} /\ OwnerOrder(owned, Assigned) # owners
                      IN /\ state' = owned
                         /\ IF switch
                            THEN NewVersion(<<topVer[1], topVer[2] + 1>>, "affinity")
                            ELSE /\ rebal' = rebal \ {m}
                                 /\ UNCHANGED <<topVer, pending, singles>>
                 ELSE /\ rebal' = (rebal \ {m}) \cup
                                  {[type |-> "Demand", part |-> p, sender |-> n, to |-> m.sender,
                                    mode |-> m.mode, first |-> m.first, upto |-> m.upto]}
                      /\ UNCHANGED <<state, topVer, pending, singles>>
    /\ action' = PartStep("Rebalance", n, p)
    /\ UNCHANGED <<alive, restarted, readyVer, owners, near, txs, counter, msgs,
                   baseline, lost, crashes, joiners, history, joinOrder, active, ckpt>>

\* A RENTING copy is evicted (its data and counter dropped) once no copy of its partition is MOVING; the
\* copies of a LOST partition stay as they are.
Evict(n, p) ==
    /\ active
    /\ p \notin lost
    /\ StateOf(n, p) = "RENTING"
    /\ \A o \in alive : StateOf(o, p) # "MOVING"
    /\ state' = [state EXCEPT ![n] = [q \in Copies(n) \ {p} |-> @[q]]]
    /\ history' = [history EXCEPT ![n][p] = 0]
    /\ counter' = [counter EXCEPT ![n] = [q \in DOMAIN @ \ {p} |-> @[q]]]
    /\ data' = [data EXCEPT ![n] = [k \in {k \in DOMAIN @ : Part(k) # p} |-> @[k]]]
    /\ action' = PartStep("Evict", n, p)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, txs, wal, msgs,
                   baseline, lost, pending, singles, rebal, crashes, joiners, joinOrder, active, ckpt>>

\* A server checkpoints and truncates its WAL archive: the records at or below each OWNING copy's LWM
\* are in the checkpoint's pages (restart still finds them, which is why the model keeps them in wal),
\* but no longer available to supply a historical rebalance; the counters' meta is written as by
\* Checkpoint. History the server offered in its single
\* message, or that rebalancing it takes part in may ask of it, is reserved (Ignite reserves WAL
\* history for the exchange and for preloading): no truncation meanwhile.
TruncateWal(n) ==
    /\ WalTruncation
    /\ n \in alive
    /\ n \notin DOMAIN singles
    /\ \A m \in rebal : n \notin {m.sender, m.to}
    /\ \E p \in Copies(n) : state[n][p].state = "OWNING" /\ counter[n][p].lwm > history[n][p]
    /\ history' = [history EXCEPT ![n] = [p \in Parts |->
                      IF StateOf(n, p) = "OWNING" THEN Max({@[p], counter[n][p].lwm}) ELSE @[p]]]
    /\ ckpt' = [ckpt EXCEPT ![n] = Meta(n)]
    /\ action' = Step("TruncateWal", n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal, msgs,
                   state, baseline, lost, pending, singles, rebal, crashes, joiners, joinOrder, active>>

\* A server (live or restarted) checkpoints: the counters' meta (LWM and gaps) is written, so a restart
\* starts from it - it holds what an exchange's absolute update did, which no WAL record holds. Ignite
\* checkpoints on a timer and skips a checkpoint with nothing changed.
Checkpoint(n) ==
    /\ Checkpoints
    /\ n \in alive \cup restarted
    /\ ckpt[n] # Meta(n)
    /\ ckpt' = [ckpt EXCEPT ![n] = Meta(n)]
    /\ action' = Step("Checkpoint", n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal, msgs,
                   state, baseline, lost, pending, singles, rebal, crashes, joiners, history, joinOrder, active>>

-----------------------------------------------------------------------------
(* Quiescence                                                               *)

\* Nothing in flight: transactions finished or unable to start, no exchange, rebalancing or eviction
\* pending (the MOVING and RENTING copies of a LOST partition wait for the operator: nothing moves).
Quiet ==
    /\ Tx!Quiet
    /\ rebal = {}
    /\ \A n \in alive, p \in Parts \ lost : StateOf(n, p) \in {"OWNING", "EVICTED"}

Done ==
    /\ Quiet
    /\ \A t \in Txs : near[t].state # "idle" \/ ~Writable(t)
    /\ action' = [name |-> "Done"]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal, msgs, pmeVars>>

Next ==
    \/ TxStep
    \/ \E n \in Servers : NodeFail(n) \/ Restart(n) \/ Join(n) \/ SendSingle(n) \/ TruncateWal(n) \/ Checkpoint(n)
    \/ BaselineChange
    \/ Activate
    \/ FullMessage
    \/ \E n, d \in Servers, p \in Parts : Supply(n, p, d)
    \/ \E n \in Servers, p \in Parts : Rebalance(n, p) \/ Evict(n, p)
    \/ Done

Spec == Init /\ [][Next]_vars

\* With weak fairness every behavior ends in Done (the model is finite and acyclic but for stuttering).
LiveSpec == Spec /\ WF_vars(Next)

-----------------------------------------------------------------------------
(* Views                                                                    *)

\* The state without the step that led to it: no action reads `action`, so states that differ only there
\* have the same futures, and exhaustive checks that need no replay (the deep models) merge them.
WithoutAction == <<alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal, msgs, pmeVars>>

-----------------------------------------------------------------------------
(* Invariants and properties                                                *)

TypeOK ==
    /\ Tx!TypeOK
    /\ baseline \subseteq Servers /\ lost \subseteq Parts /\ active \in BOOLEAN
    /\ pending \subseteq {"left", "joined", "baseline", "affinity", "activate"}
    /\ \A n \in Servers : \A p \in Copies(n) : state[n][p].state \in {"OWNING", "MOVING", "RENTING"}
    /\ \A n \in alive \cup restarted : DOMAIN counter[n] = Copies(n)
    /\ DOMAIN singles \subseteq alive /\ joiners \subseteq alive
    /\ Range(joinOrder) = alive /\ Len(joinOrder) = Cardinality(alive)
    /\ \A m \in rebal : m.type \in {"Demand", "Supply"} /\ {m.sender, m.to} \subseteq alive

Copy(n, p) == n \in alive \cup restarted /\ p \in Copies(n)
UpdatesIn(p) == Tx!DataRecsIn(p)

\* Counters are never reused, across primary switches too: a counter value names one update of a
\* partition everywhere, and an OWNING copy (live or down: its state persists) never closed as a rollback
\* a counter that names an update it lacks - otherwise comparing counters would equate different data.
\* Copies that are not OWNING may close such a counter (Ignite finalizes RENTING and MOVING copies too):
\* a MOVING copy gets the update by rebalancing, a RENTING one is evicted or, assigned again, rebalanced
\* in full (spec/TxCounters.tla states the stricter form: no copy ever closes an update's counter).
UniqueCounters ==
    \A p \in Parts :
        LET recs == UpdatesIn(p)
        IN /\ \A r, o \in recs : r.cntr = o.cntr => r.key = o.key /\ r.tx = o.tx
           /\ \A n \in Servers :
                 StateOf(n, p) = "OWNING" =>
                     \A r \in recs : r.cntr \in Durable({c \in wal[n] : c.type = "rollback"}, p) => r \in wal[n]

\* An OWNING copy holds every update its LWM covers (or a later write of the key): rebalancing and
\* idle_verify trust LWM, so a covered update the copy lacks would be lost for good.
OwningCoversLwm ==
    \A n \in Servers, p \in Parts :
        Copy(n, p) /\ state[n][p].state = "OWNING" =>
            \A r \in UpdatesIn(p) :
                r.cntr <= counter[n][p].lwm => r.key \in DOMAIN data[n] /\ data[n][r.key].cntr >= r.cntr

\* The counters of p that transactions prepared on n will apply when they finish there.
Preparing(n, p) == {w[2] : w \in UNION {{w \in txs[n][t].writes : Part(w[1]) = p} :
                                        t \in {t \in DOMAIN txs[n] : Tx!HasActive(n, t)}}}

\* An OWNING copy's counter reflects its WAL: what the WAL makes durable is covered (else an absolute
\* update passed over the copy's own updates) - except entries a full rebalance supplied before their
\* transaction committed here -, and what it holds out of order is in the WAL (else a restart would lose
\* it). MOVING and RENTING copies are left out: a copy
\* evicted and created again sits beside the WAL records of its earlier incarnation.
CounterReflectsWal ==
    \A n \in alive, p \in Parts :
        StateOf(n, p) = "OWNING" =>
            /\ Durable(wal[n], p) \subseteq Ctr!Covered(counter[n][p]) \cup Preparing(n, p)
            /\ Ctr!ItemCounters(counter[n][p].items) \subseteq Durable(wal[n], p)

\* After an exchange the primary's HWM is at least every live copy's highest applied counter (and its
\* own LWM): the counters it reserves next are new everywhere.
PrimaryHwmCovers ==
    (topVer = readyVer /\ owners # <<>>) =>
        \A p \in Parts \ lost :
            LET hwm == counter[owners[1]][p].hwm
            IN /\ hwm >= counter[owners[1]][p].lwm
               /\ \A n \in alive : p \in Copies(n) => hwm >= Ctr!HighestApplied(counter[n][p])

\* The owner list is the live part of the baseline's affinity, primary first, and the switch is atomic:
\* every live server applied the full message of readyVer, and a live owner holds a copy.
OwnersFollowAffinity ==
    /\ Range(owners) = Range(IdealOwners(baseline)) \cap alive \/ topVer # readyVer
    /\ \A n \in Range(owners) \cap alive : Parts \ lost \subseteq Copies(n)

\* An acknowledged update survives while an OWNING copy that applied it is alive or restarts: the copy
\* still holds it (or a later write of the key). MOVING copies are being rebuilt and RENTING copies serve
\* nothing (a copy evicted and assigned again starts empty beside its old WAL records); OwningCoversLwm
\* checks a rebuilt copy once it owns.
AckedNeverLost ==
    \A r \in Tx!DataRecs, n \in Servers :
        (Copy(n, Part(r.key)) /\ StateOf(n, Part(r.key)) = "OWNING" /\ Tx!Acked(r.tx) /\ r \in wal[n]) =>
            r.key \in DOMAIN data[n] /\ data[n][r.key].cntr >= r.cntr

DataIn(n, p) == [k \in {k \in DOMAIN data[n] : Part(k) = p} |-> data[n][k]]

\* idle_verify is clean when nothing is in flight: the live OWNING copies of a partition agree on the
\* counter (LWM and gaps) and the data, and every acknowledged update of it is there (LOST partitions
\* are skipped: their copies wait for the operator's reset).
IdleVerifyClean ==
    Quiet =>
        \A p \in Parts \ lost, n, o \in alive :
            (StateOf(n, p) = "OWNING" /\ StateOf(o, p) = "OWNING") =>
                /\ DataIn(n, p) = DataIn(o, p)
                /\ counter[n][p].lwm = counter[o][p].lwm /\ counter[n][p].items = counter[o][p].items
                /\ \A r \in UpdatesIn(p) : Tx!Acked(r.tx) => r.key \in DOMAIN data[n] /\ data[n][r.key].cntr >= r.cntr

\* Ignite's choice of rebalancing mode (docs/findings/wal-threshold-strict.md, moving-renting-moving.md):
\* a historical rebalance comes only from a supplier whose partition has more entries than the threshold,
\* and never to an empty demander (its first counter is above 1).
RebalanceModeAsIgnite ==
    \A m \in rebal :
        m.mode = "historical" =>
            /\ m.first > 1
            /\ PartSize(IF m.type = "Demand" THEN m.to ELSE m.sender, m.part) > WalRebalanceThreshold

\* No gap survives a node-left exchange: the full message of an exchange that finalizes finds every OWNING
\* copy without items (finalize ran once all transactions were released). A node left merged into a join
\* exchange finalizes nothing: its gaps survive until the next exchange that begins with a node left.
NoGapsAfterNodeLeft ==
    [][(FinalizesCounters /\ action'.name = "FullMessage") =>
         \A n \in alive, p \in Parts :
             (p \in DOMAIN state'[n] /\ state'[n][p].state = "OWNING") => counter'[n][p].items = <<>>]_vars

\* Liveness: with fairness every MOVING copy of a live server eventually becomes OWNING (or its server
\* fails, or the partition is LOST, or a later assignment drops the copy).
MovingBecomesOwning ==
    \A n \in Servers, p \in Parts :
        (n \in alive /\ StateOf(n, p) = "MOVING") ~>
            (n \notin alive \/ StateOf(n, p) # "MOVING" \/ p \in lost)
=============================================================================
