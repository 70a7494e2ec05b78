----------------------------- MODULE TxCounters -----------------------------
(***************************************************************************)
(* How Apache Ignite's two-phase commit (2PC) assigns partition update     *)
(* counters, for pessimistic transactions in a cluster of servers with     *)
(* persistence (seed 001, "Update counter flow" and "Crash recovery";      *)
(* ignite-internals.md, "2PC counter flow").                               *)
(*                                                                         *)
(* A near node runs transactions; each writes a fixed set of keys. The     *)
(* near node maps the keys to their primary (the near map) and sends it a  *)
(* lock request; the primary takes exclusive key locks, or answers "remap" *)
(* when its ready topology is newer than the transaction's, and the near   *)
(* node retries on the new version. At prepare the primary reserves a      *)
(* counter range per partition (reserve(delta)), gives the keys counters   *)
(* start+1, start+2, ... in key order, and sends them to the backups (the  *)
(* DHT map); backups lock, prepare and answer. The near node then commits  *)
(* or rolls back. Commit on any node writes data records to the WAL, then  *)
(* update(start, delta); nodes and transactions commit in any order        *)
(* (backup reordering). Rollback of a prepared transaction applies         *)
(* update(start, delta) with a rollback record, on the primary only after  *)
(* its backups finished. Messages are delivered in any order and are lost  *)
(* when their receiver fails. A server may crash at any point: its memory  *)
(* is lost, its WAL survives. When the primary failed, tx recovery decides *)
(* the outcome (commit only if the near node decided commit, i.e. every    *)
(* tx node is prepared; else rollback) and backups drop the counters of a  *)
(* recovered rollback. The exchange for the new topology waits for every   *)
(* transaction to finish, closes the survivors' gaps (finalize), raises    *)
(* the new primary's HWM to the maximum LWM and switches every node to the *)
(* new owner list at once. A crashed server may restart: its counters and  *)
(* data are rebuilt from its WAL (data records update(c-1, 1), rollback    *)
(* records update(start, delta)).                                          *)
(*                                                                         *)
(* What it leaves out or simplifies:                                       *)
(*  - one near node, which never fails; the value a transaction writes is  *)
(*    its own name; PRIMARY_SYNC: a transaction is acknowledged when its   *)
(*    primary committed (the reply itself is not modeled);                 *)
(*  - every partition has the same owner list, so a transaction has one    *)
(*    primary (multi-primary near maps are not modeled); the list is       *)
(*    s1, s2, ... (the seed's F(0)); key k is in partition k % Partitions; *)
(*  - topology changes are server failures only; the minor version never   *)
(*    changes; a restarted server does not rejoin (rejoining, MOVING       *)
(*    copies and rebalancing belong to the exchange and rebalance specs),  *)
(*    so every live owner is OWNING and the primary's "still primary and   *)
(*    OWNING" check at prepare always passes;                              *)
(*  - the exchange is one atomic step (spec/UpdateCounter.tla's Exchange,  *)
(*    with the owner switch); tx recovery is one atomic step over the      *)
(*    surviving tx nodes (Ignite exchanges check-prepared messages);       *)
(*  - commit and rollback on one node are atomic (WAL, data, counter):     *)
(*    nothing outside the node observes the moment in between, and a crash *)
(*    in between loses memory that restart rebuilds from the WAL;          *)
(*  - the near node's rollback is a choice after prepare (a timeout or the *)
(*    application) or its answer to a lock request lost with the primary;  *)
(*  - messages are a set: none is duplicated; a node ignores messages of a *)
(*    transaction it knows finished, which the model removes at the step   *)
(*    that finishes it;                                                    *)
(*  - no checkpoints: restart replays the whole WAL. An exchange raises a  *)
(*    survivor's LWM by an absolute update that writes no record, so a     *)
(*    checkpoint after it would restore a higher LWM; a restarted server   *)
(*    never rejoins here, so nothing depends on it (spec/PME.tla models    *)
(*    checkpoints; this model's mapping never takes the cluster's          *)
(*    Checkpoint).                                                         *)
(*                                                                         *)
(* The counter operators come from spec/UpdateCounter.tla. Conformance     *)
(* replays every edge of this model's state graph against impl/cluster.py. *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    ServerCount,  \* servers s1 .. sN, e.g. 3
    Backups,      \* backups per partition; owners are s1 .. s(Backups+1), s1 primary, e.g. 2
    Partitions,   \* partitions 0 .. Partitions-1; key k is in partition k % Partitions, e.g. 1
    TxKeys,       \* the key sets of the transactions, named t1, t2, ... by smallest key, e.g. {{0, 1}, {2}}
    MaxFailures   \* server crashes allowed, e.g. 1

ASSUME /\ ServerCount \in Nat \ {0} /\ Backups \in Nat /\ Backups < ServerCount
       /\ Partitions \in Nat \ {0} /\ MaxFailures \in Nat
       /\ \A ks \in TxKeys : ks # {} /\ ks \subseteq 0..65535  \* see Part

Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Max(S) == CHOOSE x \in S : \A y \in S : x >= y

ASSUME \A a, b \in TxKeys : Min(a) = Min(b) => a = b  \* names come from smallest keys

Server(i) == "s" \o ToString(i)
Servers == {Server(i) : i \in 1..ServerCount}
Parts == 0..(Partitions - 1)
\* Ignite's partition of an int key k (its own hash) is |k mod P|, or (k xor (k >>> 16)) & (P - 1) when P is
\* a power of two (impl/affinity.py key_partition): both are k % P for 0 <= k < 65536, hence the bound.
Part(k) == k % Partitions
TxOf(ks) == "t" \o ToString(Cardinality({o \in TxKeys : Min(o) <= Min(ks)}))
Txs == {TxOf(ks) : ks \in TxKeys}
Writes == [t \in Txs |-> CHOOSE ks \in TxKeys : TxOf(ks) = t]  \* the keys transaction t writes
InitialVer == <<1, 0>>

VARIABLES
    alive,      \* servers up and in the topology, e.g. {"s1", "s2"}
    restarted,  \* crashed servers restarted from their WAL (they do not rejoin), e.g. {"s3"}
    topVer,     \* the latest topology version <<major, minor>>: a failure adds 1 to major, e.g. <<2, 0>>
    readyVer,   \* the version whose exchange completed: transactions map on it, e.g. <<1, 0>>
    owners,     \* the owner list on readyVer, primary first, e.g. <<"s1", "s2", "s3">>
    near,       \* near[t]: the near node's transaction and its near map (the primary),
                \*   e.g. [state |-> "locking", ver |-> <<1, 0>>, primary |-> "s1"]
    txs,        \* txs[n]: the server's transactions and their writes <<key, counter>>,
                \*   e.g. [t1 |-> [state |-> "prepared", writes |-> {<<1, 1>>, <<2, 2>>}]]
    counter,    \* counter[n]: partition -> update counter (UpdateCounter's record),
                \*   e.g. (0 :> [lwm |-> 0, hwm |-> 2, items |-> <<>>, first |-> TRUE])
    data,       \* data[n]: key -> the transaction that wrote it and the update's counter,
                \*   e.g. (3 :> [tx |-> "t2", cntr |-> 3])
    wal,        \* wal[n]: the server's WAL records (it survives crashes),
                \*   e.g. {[type |-> "data", key |-> 3, tx |-> "t2", cntr |-> 3],
                \*         [type |-> "rollback", part |-> 0, start |-> 0, delta |-> 2]}
    msgs,       \* messages in flight (a set: none is duplicated),
                \*   e.g. {[type |-> "LockRequest", tx |-> "t1", to |-> "s1", ver |-> <<1, 0>>]}
    action      \* the step taken, e.g. [name |-> "Lock", tx |-> "t1", node |-> "s1"]

vars == <<alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal, msgs, action>>

Ctr == INSTANCE UpdateCounter WITH Copies <- {"c"}, Primary <- "c", MaxCounter <- 0, Deltas <- {1},
                                   MaxMissedUpdates <- 10000, pending <- <<>>, done <- <<>>,
                                   committed <- {}, rolledBack <- {}, rejoined <- {}, primary <- "c"
Fin == INSTANCE GapFinalization

-----------------------------------------------------------------------------
(* Helpers                                                                  *)

OwnerList == [i \in 1..(Backups + 1) |-> Server(i)]
Range(seq) == {seq[i] : i \in 1..Len(seq)}
OwnedParts(n) == IF n \in Range(OwnerList) THEN Parts ELSE {}
Down == Servers \ (alive \cup restarted)

\* Functions with a growing domain: TLC prints the empty one as <<>>.
Put(f, k, v) == [x \in DOMAIN f \cup {k} |-> IF x = k THEN v ELSE f[x]]

\* Transaction states on a server that hold its key locks (the primary from Lock, backups from prepare).
Active == {"locked", "preparing", "prepared", "rollingBack"}
HasActive(n, t) == t \in DOMAIN txs[n] /\ txs[n][t].state \in Active
LocksFree(n, t) == \A o \in DOMAIN txs[n] : HasActive(n, o) => Writes[o] \cap Writes[t] = {}
InState(n, t, s) == t \in DOMAIN txs[n] /\ txs[n][t].state = s

\* A transaction's writes <<key, counter>> in partition p, and the range <<start, delta>> they cover.
WritesIn(ws, p) == {w \in ws : Part(w[1]) = p}
PartsOf(ws) == {Part(w[1]) : w \in ws}
RangeOf(ws, p) == <<Min({w[2] : w \in WritesIn(ws, p)}) - 1, Cardinality(WritesIn(ws, p))>>

\* The counters the primary gives t's keys in p when its HWM is h: h+1, h+2, ... in key order.
Assign(t, p, h) ==
    LET keys == {j \in Writes[t] : Part(j) = p}
    IN {<<k, h + Cardinality({j \in keys : j <= k})>> : k \in keys}

DataRecords(t, ws) == {[type |-> "data", key |-> w[1], tx |-> t, cntr |-> w[2]] : w \in ws}

\* A server's WAL, data and counters after it commits writes ws of t: data records to the WAL, entries
\* written, then update(start, delta) per partition (Updated serves rollback too).
CommitWal(n, t, ws) == wal[n] \cup DataRecords(t, ws)
CommitData(n, t, ws) ==
    [k \in DOMAIN data[n] \cup {w[1] : w \in ws} |->
        IF \E w \in ws : w[1] = k THEN [tx |-> t, cntr |-> (CHOOSE w \in ws : w[1] = k)[2]] ELSE data[n][k]]
Updated(n, ws) ==
    [p \in DOMAIN counter[n] |->
        IF p \in PartsOf(ws) THEN Ctr!Update(counter[n][p], RangeOf(ws, p)[1], RangeOf(ws, p)[2])
        ELSE counter[n][p]]

CommitOn(n, t, ws) ==
    /\ wal' = [wal EXCEPT ![n] = CommitWal(n, t, ws)]
    /\ data' = [data EXCEPT ![n] = CommitData(n, t, ws)]
    /\ counter' = [counter EXCEPT ![n] = Updated(n, ws)]

\* The rollback records of writes ws on server n: one per partition where update(start, delta) applies.
RollbackRecords(n, ws) ==
    {[type |-> "rollback", part |-> p, start |-> RangeOf(ws, p)[1], delta |-> RangeOf(ws, p)[2]] :
     p \in {q \in PartsOf(ws) : Updated(n, ws)[q] # counter[n][q]}}

\* Rollback on server n: update(start, delta) per partition, and a rollback record where it applied.
RollbackOn(n, ws) ==
    /\ counter' = [counter EXCEPT ![n] = Updated(n, ws)]
    /\ wal' = [wal EXCEPT ![n] = @ \cup RollbackRecords(n, ws)]

\* The counters of partition p that n's WAL makes durable: data records and rollback records.
WalCounters(n, p) ==
    {r.cntr : r \in {r \in wal[n] : r.type = "data" /\ Part(r.key) = p}}
    \cup UNION {Ctr!RangeCounters(<<r.start, r.delta>>) :
                r \in {r \in wal[n] : r.type = "rollback" /\ r.part = p}}

\* Restart: every record replayed from an empty state; the counter is then restored as on partition
\* init (HWM = highest applied, first exchange ahead). For one key the highest counter is the last write.
RestoredCounter(n, p) == Ctr!Restore(Ctr!Summarize(Ctr!NewCounter, 0, WalCounters(n, p)))
RestoredData(n) ==
    LET recs == {r \in wal[n] : r.type = "data"}
    IN [k \in {r.key : r \in recs} |->
          LET last == CHOOSE r \in recs : r.key = k /\ \A o \in recs : o.key = k => o.cntr <= r.cntr
          IN [tx |-> last.tx, cntr |-> last.cntr]]

\* A message reaches only a live receiver (the near node never fails).
Receiver(m) == IF "to" \in DOMAIN m THEN m.to ELSE "near"
Sendable(ms) == {m \in ms : Receiver(m) \in alive \cup {"near"}}
Send(ms) == msgs' = msgs \cup Sendable(ms)
Reply(m, ms) == msgs' = (msgs \ {m}) \cup Sendable(ms)

Step(name, t, n) == [name |-> name, tx |-> t, node |-> n]

\* The backups a primary sends to (its DHT map): the other owners. The owner list cannot change while a
\* transaction holds locks (the exchange waits), so it is the list of the transaction's version.
DhtNodes(n) == Range(owners) \ {n}

\* Every live backup in the primary's DHT map answered (a failed backup leaves the map).
Answered(kind, t, n) ==
    \A b \in DhtNodes(n) \cap alive : [type |-> kind, tx |-> t, sender |-> b, to |-> n] \in msgs

-----------------------------------------------------------------------------
(* Initial state                                                            *)

Init ==
    /\ alive = Servers
    /\ restarted = {}
    /\ topVer = InitialVer
    /\ readyVer = InitialVer
    /\ owners = OwnerList
    /\ near = [t \in Txs |-> [state |-> "idle", ver |-> InitialVer, primary |-> OwnerList[1]]]
    /\ txs = [n \in Servers |-> <<>>]
    /\ counter = [n \in Servers |-> [p \in OwnedParts(n) |-> Ctr!NewCounter]]
    /\ data = [n \in Servers |-> <<>>]
    /\ wal = [n \in Servers |-> {}]
    /\ msgs = {}
    /\ action = [name |-> "Init"]

-----------------------------------------------------------------------------
(* The near node                                                            *)

\* Tx start: map the keys to the primary on the ready version (near map) and send the lock request.
\* Mapping waits while an exchange is pending.
TxStart(t) ==
    /\ near[t].state = "idle"
    /\ owners # <<>>
    /\ topVer = readyVer
    /\ near' = [near EXCEPT ![t] = [state |-> "locking", ver |-> readyVer, primary |-> owners[1]]]
    /\ Send({[type |-> "LockRequest", tx |-> t, to |-> owners[1], ver |-> readyVer]})
    /\ action' = [name |-> "TxStart", tx |-> t]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, txs, counter, data, wal>>

\* Remap: the primary answered with a newer ready version; map again on it and retry the lock.
TxRemap(t) ==
    /\ near[t].state = "locking"
    /\ owners # <<>>
    /\ topVer = readyVer
    /\ \E m \in msgs :
        /\ m.type = "LockResponse" /\ m.tx = t /\ m.ver # near[t].ver
        /\ near' = [near EXCEPT ![t] = [state |-> "locking", ver |-> readyVer, primary |-> owners[1]]]
        /\ Reply(m, {[type |-> "LockRequest", tx |-> t, to |-> owners[1], ver |-> readyVer]})
    /\ action' = [name |-> "TxRemap", tx |-> t]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, txs, counter, data, wal>>

\* Keys locked on the primary: the application commits, the near node sends the prepare request.
TxPrepare(t) ==
    /\ near[t].state = "locking"
    /\ LET m == [type |-> "LockResponse", tx |-> t, sender |-> near[t].primary, ver |-> near[t].ver]
       IN /\ m \in msgs
          /\ Reply(m, {[type |-> "PrepareRequest", tx |-> t, to |-> near[t].primary]})
    /\ near' = [near EXCEPT ![t].state = "preparing"]
    /\ action' = [name |-> "TxPrepare", tx |-> t]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, txs, counter, data, wal>>

PrepareResponse(t) == [type |-> "PrepareResponse", tx |-> t, sender |-> near[t].primary]
FinishRequest(t, commit) == [type |-> "FinishRequest", tx |-> t, to |-> near[t].primary, commit |-> commit]

\* PREPARED: the near node decides commit and sends the finish request to the primary.
TxCommit(t) ==
    /\ near[t].state = "preparing"
    /\ PrepareResponse(t) \in msgs
    /\ near' = [near EXCEPT ![t].state = "committed"]
    /\ Reply(PrepareResponse(t), {FinishRequest(t, TRUE)})
    /\ action' = [name |-> "TxCommit", tx |-> t]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, txs, counter, data, wal>>

\* Rollback by the near node: after PREPARED (a timeout, or the application), or when the lock request
\* was lost with its primary (the lock future fails on node left; its lock messages are cancelled; a
\* restarted primary is a new node that never saw the request).
TxRollback(t) ==
    /\ \/ /\ near[t].state = "preparing"
          /\ PrepareResponse(t) \in msgs
          /\ Reply(PrepareResponse(t), {FinishRequest(t, FALSE)})
       \/ /\ near[t].state = "locking"
          /\ near[t].primary \notin alive \/ \A m \in msgs : m.tx # t
          /\ msgs' = {m \in msgs : m.tx # t}
    /\ near' = [near EXCEPT ![t].state = "rolledBack"]
    /\ action' = [name |-> "TxRollback", tx |-> t]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, txs, counter, data, wal>>

-----------------------------------------------------------------------------
(* The primary                                                              *)

\* Lock request on the transaction's version: take exclusive locks on its keys (waits while held).
Lock(t, n) ==
    /\ topVer = readyVer
    /\ LET m == [type |-> "LockRequest", tx |-> t, to |-> n, ver |-> readyVer]
       IN /\ m \in msgs
          /\ LocksFree(n, t)
          /\ Reply(m, {[type |-> "LockResponse", tx |-> t, sender |-> n, ver |-> readyVer]})
    /\ txs' = [txs EXCEPT ![n] = Put(@, t, [state |-> "locked", writes |-> {}])]
    /\ action' = Step("Lock", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, counter, data, wal>>

\* Lock request on an older version: the ready topology is newer and (every server change alters the
\* cache's affinity) incompatible, so the primary answers "remap" with its version.
LockRemap(t, n) ==
    /\ topVer = readyVer
    /\ \E m \in msgs :
        /\ m.type = "LockRequest" /\ m.tx = t /\ m.to = n /\ m.ver # readyVer
        /\ Reply(m, {[type |-> "LockResponse", tx |-> t, sender |-> n, ver |-> readyVer]})
    /\ action' = Step("LockRemap", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal>>

\* Prepare: reserve a counter range per partition (reserve(delta)), give the keys their counters and
\* send them in prepare requests to the backups (the DHT map).
Prepare(t, n) ==
    /\ LET m == [type |-> "PrepareRequest", tx |-> t, to |-> n]
           ps == {Part(k) : k \in Writes[t]}
           ws == UNION {Assign(t, p, counter[n][p].hwm) : p \in ps}
       IN /\ m \in msgs
          /\ InState(n, t, "locked")
          /\ counter' = [counter EXCEPT ![n] = [p \in DOMAIN @ |->
                           IF p \in ps THEN Ctr!Reserve(@[p], Cardinality(WritesIn(ws, p))) ELSE @[p]]]
          /\ txs' = [txs EXCEPT ![n][t] = [state |-> "preparing", writes |-> ws]]
          /\ Reply(m, {[type |-> "DhtPrepareRequest", tx |-> t, sender |-> n, to |-> b, writes |-> ws] :
                       b \in DhtNodes(n)})
    /\ action' = Step("Prepare", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, data, wal>>

\* Every live backup answered: the primary is PREPARED and answers the near node. A backup that
\* failed is dropped from the DHT map.
Prepared(t, n) ==
    /\ InState(n, t, "preparing")
    /\ Answered("DhtPrepareResponse", t, n)
    /\ txs' = [txs EXCEPT ![n][t].state = "prepared"]
    /\ msgs' = {m \in msgs : ~(m.type = "DhtPrepareResponse" /\ m.tx = t)}
               \cup {[type |-> "PrepareResponse", tx |-> t, sender |-> n]}
    /\ action' = Step("Prepared", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, counter, data, wal>>

\* Commit on the primary: WAL, data and counters; the finish request goes to the backups. The
\* primary's reply (PRIMARY_SYNC) acknowledges the transaction.
Commit(t, n) ==
    /\ LET m == [type |-> "FinishRequest", tx |-> t, to |-> n, commit |-> TRUE]
       IN /\ m \in msgs
          /\ InState(n, t, "prepared")
          /\ CommitOn(n, t, txs[n][t].writes)
          /\ Reply(m, {[type |-> "DhtFinishRequest", tx |-> t, sender |-> n, to |-> b, commit |-> TRUE] :
                       b \in DhtNodes(n)})
    /\ txs' = [txs EXCEPT ![n][t].state = "committed"]
    /\ action' = Step("Commit", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near>>

\* Rollback on the primary, first step: the backups roll back first.
Rollback(t, n) ==
    /\ LET m == [type |-> "FinishRequest", tx |-> t, to |-> n, commit |-> FALSE]
       IN /\ m \in msgs
          /\ InState(n, t, "prepared")
          /\ Reply(m, {[type |-> "DhtFinishRequest", tx |-> t, sender |-> n, to |-> b, commit |-> FALSE] :
                       b \in DhtNodes(n)})
    /\ txs' = [txs EXCEPT ![n][t].state = "rollingBack"]
    /\ action' = Step("Rollback", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, counter, data, wal>>

\* Rollback on the primary, second step: every live backup finished; now update(start, delta) and the
\* rollback record here.
RolledBack(t, n) ==
    /\ InState(n, t, "rollingBack")
    /\ Answered("DhtFinishResponse", t, n)
    /\ RollbackOn(n, txs[n][t].writes)
    /\ txs' = [txs EXCEPT ![n][t].state = "rolledBack"]
    /\ msgs' = {m \in msgs : ~(m.type = "DhtFinishResponse" /\ m.tx = t)}
    /\ action' = Step("RolledBack", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, data>>

-----------------------------------------------------------------------------
(* Backups                                                                  *)

\* Backup prepare: lock the keys, keep the keys' counters, answer the primary.
BackupPrepare(t, n) ==
    /\ \E m \in msgs :
        /\ m.type = "DhtPrepareRequest" /\ m.tx = t /\ m.to = n
        /\ LocksFree(n, t)
        /\ txs' = [txs EXCEPT ![n] = Put(@, t, [state |-> "prepared", writes |-> m.writes])]
        /\ Reply(m, {[type |-> "DhtPrepareResponse", tx |-> t, sender |-> n, to |-> m.sender]})
    /\ action' = Step("BackupPrepare", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, counter, data, wal>>

\* Backup commit: WAL, data, then update(start, delta) - possibly after later transactions.
BackupCommit(t, n) ==
    /\ \E m \in msgs :
        /\ m.type = "DhtFinishRequest" /\ m.tx = t /\ m.to = n /\ m.commit
        /\ InState(n, t, "prepared")
        /\ CommitOn(n, t, txs[n][t].writes)
        /\ msgs' = msgs \ {m}
    /\ txs' = [txs EXCEPT ![n][t].state = "committed"]
    /\ action' = Step("BackupCommit", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near>>

\* Backup rollback: update(start, delta) and the rollback record; tell the primary.
BackupRollback(t, n) ==
    /\ \E m \in msgs :
        /\ m.type = "DhtFinishRequest" /\ m.tx = t /\ m.to = n /\ ~m.commit
        /\ InState(n, t, "prepared")
        /\ RollbackOn(n, txs[n][t].writes)
        /\ Reply(m, {[type |-> "DhtFinishResponse", tx |-> t, sender |-> n, to |-> m.sender]})
    /\ txs' = [txs EXCEPT ![n][t].state = "rolledBack"]
    /\ action' = Step("BackupRollback", t, n)
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, data>>

-----------------------------------------------------------------------------
(* Failures, recovery and the exchange                                      *)

\* A server crashes: memory (transactions, locks, data, counters) is lost, the WAL survives, messages
\* to it are lost. The topology moves to a new major version.
NodeFail(n) ==
    /\ n \in alive
    /\ Cardinality(Servers \ alive) < MaxFailures
    /\ alive' = alive \ {n}
    /\ topVer' = <<topVer[1] + 1, 0>>
    /\ txs' = [txs EXCEPT ![n] = <<>>]
    /\ data' = [data EXCEPT ![n] = <<>>]
    /\ counter' = [counter EXCEPT ![n] = [p \in OwnedParts(n) |-> Ctr!NewCounter]]
    /\ msgs' = {m \in msgs : Receiver(m) # n}
    /\ action' = [name |-> "NodeFail", node |-> n]
    /\ UNCHANGED <<restarted, readyVer, owners, near, wal>>

\* A crashed server restarts: counters and data rebuilt from its WAL.
Restart(n) ==
    /\ n \in Down
    /\ restarted' = restarted \cup {n}
    /\ counter' = [counter EXCEPT ![n] = [p \in OwnedParts(n) |-> RestoredCounter(n, p)]]
    /\ data' = [data EXCEPT ![n] = RestoredData(n)]
    /\ action' = [name |-> "Restart", node |-> n]
    /\ UNCHANGED <<alive, topVer, readyVer, owners, near, txs, wal, msgs>>

\* Tx recovery is due when t's primary failed after the near node sent the prepare request, and some
\* server still holds t prepared, or t still has messages, or the near node has not decided.
RecoveryDue(t) ==
    /\ near[t].primary \notin alive
    /\ near[t].state \in {"preparing", "committed", "rolledBack"}
    /\ \/ near[t].state = "preparing"
       \/ \E n \in alive : InState(n, t, "prepared")
       \/ \E m \in msgs : m.tx = t

\* Does a backup rolling back a recovered transaction apply its counter range? Not in Ignite: the range
\* reaches a backup with the finish request, which never came, so the backup drops the counters (no
\* update, no record) and finalize closes the hole at the exchange - if some range above it was applied.
\* spec/TxCountersFixed.tla proposes TRUE (docs/pme.md, section 9: a rolled-back range handed out again).
RecoveredRollbackCloses == FALSE

\* Tx recovery after the primary failed: commit only if every tx node is prepared - the near node is
\* prepared only once it decided commit - else roll back. Backups commit as usual; a backup rolling
\* back drops the counters (RecoveredRollbackCloses).
Recover(t) ==
    /\ RecoveryDue(t)
    /\ LET commit == near[t].state = "committed"
           outcome == IF commit THEN "committed" ELSE "rolledBack"
           prepared == {n \in alive : InState(n, t, "prepared")}
           applies == commit \/ RecoveredRollbackCloses
           ws(n) == txs[n][t].writes
       IN /\ near' = [near EXCEPT ![t].state = outcome]
          /\ txs' = [n \in Servers |->
                       IF n \in prepared THEN [txs[n] EXCEPT ![t].state = outcome] ELSE txs[n]]
          /\ wal' = [n \in Servers |->
                       IF n \notin prepared THEN wal[n]
                       ELSE IF commit THEN CommitWal(n, t, ws(n))
                       ELSE IF applies THEN wal[n] \cup RollbackRecords(n, ws(n)) ELSE wal[n]]
          /\ data' = [n \in Servers |-> IF n \in prepared /\ commit THEN CommitData(n, t, ws(n)) ELSE data[n]]
          /\ counter' = [n \in Servers |-> IF n \in prepared /\ applies THEN Updated(n, ws(n)) ELSE counter[n]]
    /\ msgs' = {m \in msgs : m.tx # t}
    /\ action' = [name |-> "Recover", tx |-> t]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners>>

\* The exchange (PME) for the new topology, once every transaction is finished on every live server:
\* a server left, so the survivors finalize their counters (holes logged as rollback records), the
\* coordinator sends every owner the maximum LWM (update(value) raises the new primary's HWM), and
\* every server switches to the new owner list at once.
Exchange ==
    /\ topVer # readyVer
    /\ \A n \in alive, t \in Txs : ~HasActive(n, t)
    /\ \A t \in Txs : ~RecoveryDue(t)
    /\ LET survivors == Range(owners) \cap alive
           final == [n \in survivors |-> [p \in Parts |-> Fin!Finalized(counter[n][p])]]
           maxLwm == [p \in Parts |-> Max({final[n][p].lwm : n \in survivors})]
       IN /\ counter' = [n \in Servers |-> IF n \in survivors
                           THEN [p \in Parts |-> Ctr!UpdateLwm(final[n][p], maxLwm[p])]
                           ELSE counter[n]]
          /\ wal' = [n \in Servers |-> IF n \in survivors
                       THEN wal[n] \cup UNION {Fin!GapRecords(p, counter[n][p]) : p \in Parts}
                       ELSE wal[n]]
          /\ owners' = SelectSeq(owners, LAMBDA o : o \in alive)
    /\ readyVer' = topVer
    /\ action' = [name |-> "Exchange"]
    /\ UNCHANGED <<alive, restarted, topVer, near, txs, data, msgs>>

\* Nothing is in flight: every started transaction finished everywhere and no exchange is pending.
Quiet ==
    /\ \A t \in Txs : near[t].state \in {"idle", "committed", "rolledBack"}
    /\ msgs = {}
    /\ \A n \in alive, t \in Txs : ~HasActive(n, t)
    /\ topVer = readyVer

\* Every transaction finished: a terminal state (recorded, so that it is not a deadlock).
Done ==
    /\ Quiet
    /\ \A t \in Txs : near[t].state # "idle"
    /\ action' = [name |-> "Done"]
    /\ UNCHANGED <<alive, restarted, topVer, readyVer, owners, near, txs, counter, data, wal, msgs>>

Next ==
    \/ \E t \in Txs : TxStart(t) \/ TxRemap(t) \/ TxPrepare(t) \/ TxCommit(t) \/ TxRollback(t) \/ Recover(t)
    \/ \E t \in Txs, n \in alive :
        \/ Lock(t, n) \/ LockRemap(t, n) \/ Prepare(t, n) \/ Prepared(t, n) \/ Commit(t, n)
        \/ Rollback(t, n) \/ RolledBack(t, n)
        \/ BackupPrepare(t, n) \/ BackupCommit(t, n) \/ BackupRollback(t, n)
    \/ \E n \in Servers : NodeFail(n) \/ Restart(n)
    \/ Exchange
    \/ Done

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Invariants                                                               *)

TypeOK ==
    /\ alive \subseteq Servers /\ restarted \subseteq Servers \ alive
    /\ \A t \in Txs : near[t].state \in {"idle", "locking", "preparing", "committed", "rolledBack"}
    /\ \A n \in Servers : \A t \in DOMAIN txs[n] : txs[n][t].state \in Active \cup {"committed", "rolledBack"}
    /\ \A m \in msgs : Receiver(m) \in alive \cup {"near"}

AllRecords == UNION {wal[n] : n \in Servers}
DataRecs == {r \in AllRecords : r.type = "data"}
DataRecsIn(p) == {r \in DataRecs : Part(r.key) = p}
ClosedCounters(p) == UNION {Ctr!RangeCounters(<<r.start, r.delta>>) :
                            r \in {r \in AllRecords : r.type = "rollback" /\ r.part = p}}

\* A counter value is never assigned to two different updates of a partition, on any server, alive or
\* not, and never both to an update and to a rollback: otherwise comparing counters (rebalancing,
\* idle_verify) would equate different data.
UniqueCounters ==
    \A p \in Parts :
        LET recs == DataRecsIn(p)
            closed == ClosedCounters(p)
        IN \A r \in recs : /\ r.cntr \notin closed
                           /\ \A o \in recs : r.cntr = o.cntr => r.key = o.key /\ r.tx = o.tx

\* Every counter <= LWM on a server is applied or closed there, or is no update at all (rolled back, or
\* never applied anywhere: the exchange's absolute update closes such counters without a record).
\* Rebalancing trusts LWM: a covered counter whose update the copy lacks is an update lost for good.
LwmIsDurable ==
    \A n \in alive \cup restarted : \A p \in OwnedParts(n) :
        LET updates == {r.cntr : r \in DataRecsIn(p)}
        IN \A c \in 1..counter[n][p].lwm : c \in WalCounters(n, p) \/ c \notin updates

\* The counter reflects every update in the WAL, and what it holds out of order is in the WAL: restart
\* rebuilds it from the WAL, so a counter ahead of its WAL would lose those updates at a restart.
CounterReflectsWal ==
    \A n \in alive \cup restarted : \A p \in OwnedParts(n) :
        LET ctr == counter[n][p]
        IN /\ WalCounters(n, p) \subseteq Ctr!Covered(ctr)
           /\ Ctr!ItemCounters(ctr.items) \subseteq WalCounters(n, p)

\* The primary's HWM >= its LWM, and >= every live owner's highest applied counter: otherwise it would
\* hand out counters that are already used.
PrimaryHwmCovers ==
    owners[1] \in alive =>
        \A p \in Parts :
            LET hwm == counter[owners[1]][p].hwm
            IN /\ hwm >= counter[owners[1]][p].lwm
               /\ \A n \in Range(owners) \cap alive : hwm >= Ctr!HighestApplied(counter[n][p])

\* Acknowledged (PRIMARY_SYNC): the near node decided commit and the primary committed.
Acked(t) == near[t].state = "committed" /\ \E r \in wal[near[t].primary] : r.type = "data" /\ r.tx = t

\* An acknowledged update is never lost while an owner that applied it is alive or restarts: the server
\* still holds it (or a later write of the key).
AckedNeverLost ==
    \A r \in DataRecs, n \in alive \cup restarted :
        (Acked(r.tx) /\ r \in wal[n]) => (r.key \in DOMAIN data[n] /\ data[n][r.key].cntr >= r.cntr)

\* 2PC's vote: the near node decides commit only when every live backup has prepared (or committed).
CommitOnlyPrepared ==
    \A t \in Txs : near[t].state = "committed" =>
        \A b \in (Range(owners) \cap alive) \ {near[t].primary} :
            t \in DOMAIN txs[b] /\ txs[b][t].state \in {"prepared", "committed"}

DataIn(n, p) == [k \in {k \in DOMAIN data[n] : Part(k) = p} |-> data[n][k]]

\* Once nothing is in flight, the surviving owners hold the same data and counters that differ at most by
\* gaps finalize closes (same highest applied), and every acknowledged update is on each of them: the
\* state an exchange or idle_verify sees must need no rebalancing and have lost nothing.
QuietConsistent ==
    Quiet =>
        \A n, o \in Range(owners) \cap alive :
            /\ \A p \in Parts : DataIn(n, p) = DataIn(o, p)
                                /\ Ctr!HighestApplied(counter[n][p]) = Ctr!HighestApplied(counter[o][p])
            /\ \A r \in DataRecs : Acked(r.tx) => r.key \in DOMAIN data[n] /\ data[n][r.key].cntr >= r.cntr
=============================================================================
