------------------------ MODULE HazelcastAntiEntropy ------------------------
(***************************************************************************)
(* Hazelcast's replica version vectors and anti-entropy (seed 002,         *)
(* "Hazelcast ensures data safety with anti-entropy"; peers.md facts read  *)
(* from Hazelcast 5.x: PartitionReplicaFragmentVersions,                   *)
(* PartitionReplicaManager, PartitionPrimaryReplicaAntiEntropyTask,        *)
(* PartitionBackupReplicaAntiEntropyOperation, PartitionReplicaSync-       *)
(* Request/Response/RetryResponse and the Backup operation), for one       *)
(* partition.                                                              *)
(*                                                                         *)
(* The partition table lists the partition's replicas by index: 0 is the   *)
(* owner (primary), 1..Slots the backups. Every member keeps, per          *)
(* namespace (a fragment: one map, or the shared non-fragmented            *)
(* namespace), a vector of Slots versions and a dirty flag; slot r is the  *)
(* version of backup replica r. A put on the owner applies locally,        *)
(* increments slots 1..BackupCount (the requested count, also for          *)
(* replicas that do not exist; slots at -1 are skipped) and sends every    *)
(* existing backup replica r <= BackupCount, and r < the live members, a   *)
(* Backup carrying the whole vector. Replica r compares slot r: stale      *)
(* (lower, or its own slot is the "requires sync" marker -1) is ignored;   *)
(* the next version is applied; a jump is applied and marks the fragment  *)
(* dirty; an equal version is re-run. A dirty fragment asks the owner for  *)
(* a sync. A backup that fails while applying marks its slot -1.           *)
(*                                                                         *)
(* Anti-entropy: the owner periodically drops the fragments its services   *)
(* no longer have (a destroyed map) and sends every replica of the table   *)
(* its slot of every remaining fragment; the replica drops the fragments   *)
(* the owner did not send and asks for a sync of those that are dirty or   *)
(* differ. Sync requests are flow-controlled: one permit per namespace     *)
(* from a per-member pool of MaxParallel (0 disables sync), one request in *)
(* flight per (namespace, replica index), a timeout frees the permit. The  *)
(* owner answers each namespace it has a permit for with the namespace's   *)
(* data and vector, and the rest (or all: not the owner, no permit) with a *)
(* retry that only frees the requester's permits. A response is installed  *)
(* only on the member that is still that replica index (versions set from  *)
(* the index upward, dirty cleared); elsewhere it only clears the request, *)
(* and a member that is no replica at all clears its versions.            *)
(*                                                                         *)
(* Membership: a member crashes (memory lost, messages to and from it      *)
(* lost, requests to it cancelled by their senders); if it owned the       *)
(* partition, the surviving replica with the smallest index c is promoted  *)
(* and only its vectors are rewritten: slots 1..c-1 take slot c's value.   *)
(* A crashed member joins again empty; the master's repartitioning fills a *)
(* vacant replica index with a live member (a joiner, or a replica shifted *)
(* up from a larger index) by a copy migration: the owner's data (for      *)
(* indexes <= BackupCount) and its vectors from the new index upward,      *)
(* dirty cleared. A map is destroyed on every member at once.              *)
(*                                                                         *)
(* Simplifications: one partition, one backup count for every namespace,   *)
(* Slots versions per vector (Hazelcast keeps 6; slots past the table stay *)
(* 0); the network is a set of messages delivered in any order, each at    *)
(* most once (a lost message is a Drop); a migration is one step and       *)
(* replaces the destination's fragments with the owner's; the owner        *)
(* answers a sync atomically (its permits are taken and given back in the  *)
(* same step), with the namespace's data even when it is empty (the        *)
(* offloaded variant, Hazelcast 5's default, leaves an empty namespace to  *)
(* the retry response); messages of a crashed member are lost in both      *)
(* directions; the owner never loses all its replicas at once.             *)
(***************************************************************************)
EXTENDS Naturals, Integers, Sequences, FiniteSets, TLC

CONSTANTS
    MemberCount,  \* members m1 .. mN, the initial partition table in that order, e.g. 3
    Slots,        \* versions per vector = the largest backup replica index, e.g. 2 (Hazelcast: 6)
    BackupCount,  \* backups requested by every put, e.g. 2
    Maps,         \* the fragmented namespaces (maps), e.g. {"map1"}
    Internal,     \* the shared non-fragmented namespace, never dropped, e.g. "internal"
    Keys,         \* the keys a put may write, e.g. {0}
    MaxPuts,      \* puts in a behavior; put n writes value n, e.g. 2
    MaxParallel,  \* replica sync permits per member (max parallel replications; 0: sync off), e.g. 1
    MaxLosses,    \* messages lost or backups failed in a behavior, e.g. 1
    MaxCrashes    \* member crashes in a behavior, e.g. 1

ASSUME /\ MemberCount \in Nat \ {0} /\ Slots \in Nat \ {0} /\ BackupCount \in 1..Slots
       /\ Internal \notin Maps /\ Keys # {} /\ MaxPuts \in Nat /\ MaxParallel \in Nat
       /\ MaxLosses \in Nat /\ MaxCrashes \in Nat

VARIABLES
    alive,     \* the live members, e.g. {"m1", "m3"}
    table,     \* table[i]: the member at replica index i in 0..Slots, or None, e.g. (0 :> "m2" @@ 1 :> "none" @@ 2 :> "m3")
    data,      \* data[m][ns]: m's entries of namespace ns (key -> value), e.g. ("m1" :> ("map1" :> (0 :> 2)))
    versions,  \* versions[m][ns]: m's fragment versions, e.g. [v |-> <<2, 1>>, dirty |-> FALSE]
    syncs,     \* syncs[m]: m's sync requests in flight, <<namespace, replica index>>, e.g. {<<"map1", 1>>}
    permits,   \* permits[m]: m's free sync permits, e.g. 0
    serving,   \* serving[o]: the replications owner o prepares offloaded, holding a permit each, as a bag of
               \*   <<member, replica index, namespace>>, e.g. (<<"m2", 1, "map1">> :> 1)
    msgs,      \* messages in flight, e.g. {[type |-> "Backup", from |-> "m1", to |-> "m2", replica |-> 1, ...]}
    destroyed, \* maps destroyed so far, e.g. {"map1"}
    puts,      \* puts so far (the last value written), e.g. 2
    losses,    \* messages lost or backups failed so far, e.g. 1
    crashes,   \* crashes so far, e.g. 1
    forked,    \* forked[m] (ghost): namespaces in which m holds updates the owner lost when a replica behind
               \*   m was promoted, until a sync or a migration replaces m's data, e.g. ("m3" :> {"map1"})
    action     \* the step taken, e.g. [name |-> "Put", ns |-> "map1", key |-> 0, value |-> 2]

vars == <<alive, table, data, versions, syncs, permits, serving, msgs, destroyed, puts, losses, crashes, forked, action>>

Member(i) == "m" \o ToString(i)
Members == {Member(i) : i \in 1..MemberCount}
None == "none"
Namespaces == Maps \cup {Internal}
Indexes == 0..Slots

Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Min2(a, b) == IF a <= b THEN a ELSE b

-----------------------------------------------------------------------------
(* Fragment versions (PartitionReplicaFragmentVersions)                     *)

Zero == [i \in 1..Slots |-> 0]
Fresh == [v |-> Zero, dirty |-> FALSE]

\* Entries are created on first use: a fragment m has no entry for reads as a fresh one.
Fragment(m, ns) == IF ns \in DOMAIN versions[m] THEN versions[m][ns] ELSE Fresh

\* The owner's increment for n requested backups: slots 1..n, those at -1 ("requires sync") skipped.
Increment(vec, n) == [i \in 1..Slots |-> IF i <= n /\ vec[i] # -1 THEN vec[i] + 1 ELSE vec[i]]

\* Slots r.. of new, the rest of cur: a replica keeps only the versions of its own index and beyond.
CopyFrom(cur, new, r) == [i \in 1..Slots |-> IF i >= r THEN new[i] ELSE cur[i]]

\* A backup is stale for replica r when r's slot is ahead of the backup's, or marked "requires sync".
Stale(f, vec, r) == f.v[r] = -1 \/ f.v[r] > vec[r]

\* update(): a newer version is copied from r upward; a jump of more than one marks the fragment dirty.
Update(f, vec, r) ==
    IF f.v[r] < vec[r]
    THEN [v |-> CopyFrom(f.v, vec, r), dirty |-> f.dirty \/ vec[r] - f.v[r] > 1]
    ELSE f

\* set() after a sync or a migration: versions from r upward, lower slots cleared, dirty cleared.
Installed(vec, r) == [v |-> [i \in 1..Slots |-> IF i >= r THEN vec[i] ELSE 0], dirty |-> FALSE]

\* After a promotion from index c the new owner's slots 1..c-1 take the value of slot c.
Shift(vec, c) == [i \in 1..Slots |-> IF i < c THEN vec[c] ELSE vec[i]]

\* markAsSyncRequired: a backup that failed while applying leaves replica r's slot at -1.
Failed(f, vec, r) == [f EXCEPT !.v[r] = -1]

\* Backup-count slots the owner increments per put: the requested count.
Increments == BackupCount

\* The replica indexes a put sends backups to: 1..BackupCount, capped at the live members but one as
\* Hazelcast's OperationBackupHandler caps them (getMaxAllowedBackupCount) - a replica left at a higher
\* index by a crash gets none until a migration shifts it up.
Backed == 1..Min2(BackupCount, Cardinality(alive) - 1)

\* Whether the owner's anti-entropy round sends the operations: always - also with no fragment left,
\* so that the backups drop theirs.
Sends(kept) == TRUE

-----------------------------------------------------------------------------
(* Helpers                                                                  *)

Owner == table[0]
Replicas == {table[i] : i \in Indexes} \ {None}
IndexOf(m) == IF m \in Replicas THEN CHOOSE i \in Indexes : table[i] = m ELSE -1
Data(m, ns) == IF ns \in DOMAIN data[m] THEN data[m][ns] ELSE <<>>
Empty == [m \in Members |-> <<>>]

\* The namespaces the owner's services have: its record stores and the non-fragmented namespace.
ServiceNamespaces(o) == DOMAIN data[o] \cup {Internal}

\* A replica may ask for a sync when the owner is known and is not itself, and it is still a replica.
CanSync(m) == Owner # None /\ Owner # m /\ IndexOf(m) >= 1

\* The namespaces of nss m may request for replica r now: not already in flight.
Requestable(m, nss, r) == IF CanSync(m) THEN {ns \in nss : <<ns, r>> \notin syncs[m]} ELSE {}

\* Which requestable namespaces get a permit: as many as m has free permits (any of them).
Grants(m, nss, r) ==
    LET can == Requestable(m, nss, r)
    IN {s \in SUBSET can : Cardinality(s) = Min2(permits[m], Cardinality(can))}

\* Register the granted namespaces g and send one request for them (part of the caller's step).
RequestMsgs(m, g, r) == IF g = {} THEN {}
                         ELSE {[type |-> "SyncRequest", from |-> m, to |-> Owner, replica |-> r, namespaces |-> g]}
Request(m, g, r) ==
    /\ syncs' = [syncs EXCEPT ![m] = @ \cup {<<ns, r>> : ns \in g}]
    /\ permits' = [permits EXCEPT ![m] = @ - Cardinality(g)]

\* Clear m's requests for these namespaces and index, each freeing its permit - only the requests still
\* registered: one that timed out gave its permit back already.
Cleared(m, nss, r) == {<<ns, r>> : ns \in nss} \cap syncs[m]
PermitsBack(m, nss, r) == Cardinality(Cleared(m, nss, r))
ClearRequests(m, nss, r) ==
    /\ syncs' = [syncs EXCEPT ![m] = @ \ Cleared(m, nss, r)]
    /\ permits' = [permits EXCEPT ![m] = @ + PermitsBack(m, nss, r)]

Step(name, m, msg) == [name |-> name, member |-> m, msg |-> msg]

\* Bags (element -> count) of the owner's offloaded replications.
Plus(bag, S) == [t \in DOMAIN bag \cup S |-> (IF t \in DOMAIN bag THEN bag[t] ELSE 0) + (IF t \in S THEN 1 ELSE 0)]
Minus(bag, t) == [u \in {u \in DOMAIN bag : u # t \/ bag[u] > 1} |-> IF u = t THEN bag[u] - 1 ELSE bag[u]]
RECURSIVE Count(_, _)
Count(bag, D) == IF D = {} THEN 0 ELSE LET t == CHOOSE t \in D : TRUE IN bag[t] + Count(bag, D \ {t})
Serving(m) == Count(serving[m], DOMAIN serving[m])

\* Backups and anti-entropy operations from the owner to a member run in the order they were sent,
\* but backups may be delayed, reordered among themselves, or lost. An anti-entropy operation names
\* the backups in flight before it (`after`, by value: a put's number names it); a backup sent while
\* one is in flight is `held` until it ran.
BackupsTo(m) == {x.value : x \in {x \in msgs : x.type = "Backup" /\ x.to = m}}
RoundTo(m) == \E x \in msgs : x.type = "AntiEntropy" /\ x.to = m
Released(m) == {IF x.type = "Backup" /\ x.to = m THEN [x EXCEPT !.held = FALSE] ELSE x : x \in msgs}

-----------------------------------------------------------------------------
(* Initial state                                                            *)

Init ==
    /\ alive = Members
    /\ table = [i \in Indexes |-> IF i < MemberCount THEN Member(i + 1) ELSE None]
    /\ data = Empty
    /\ versions = Empty
    /\ syncs = [m \in Members |-> {}]
    /\ permits = [m \in Members |-> MaxParallel]
    /\ serving = [m \in Members |-> <<>>]
    /\ msgs = {}
    /\ destroyed = {}
    /\ puts = 0
    /\ losses = 0
    /\ crashes = 0
    /\ forked = [m \in Members |-> {}]
    /\ action = [name |-> "Init"]

-----------------------------------------------------------------------------
(* Puts and backups                                                         *)

\* The owner runs a backup-aware put: applies it, increments the vector, sends each backup replica
\* r \in Backed in the table a Backup carrying the whole vector.
Put(ns, k) ==
    /\ Owner # None
    /\ puts < MaxPuts
    /\ ns \notin destroyed
    /\ LET o == Owner
           vec == Increment(Fragment(o, ns).v, Increments)
           val == puts + 1
       IN /\ data' = [data EXCEPT ![o] = (ns :> ((k :> val) @@ Data(o, ns))) @@ @]
          /\ versions' = [versions EXCEPT ![o] = (ns :> [Fragment(o, ns) EXCEPT !.v = vec]) @@ @]
          /\ msgs' = msgs \cup {[type |-> "Backup", from |-> o, to |-> table[r], replica |-> r, ns |-> ns,
                                 key |-> k, value |-> val, versions |-> vec, held |-> RoundTo(table[r])] :
                                r \in {r \in Backed : table[r] # None}}
          /\ puts' = val
          /\ action' = [name |-> "Put", ns |-> ns, key |-> k, value |-> val]
    /\ UNCHANGED <<alive, table, syncs, permits, serving, destroyed, losses, crashes, forked>>

\* Replica m runs a Backup: ignored if m is no longer replica r or the backup is stale; else applied,
\* versions updated (dirty on a jump), and a dirty fragment asks the owner for a sync.
Backup(m, b) ==
    /\ b \in msgs /\ b.type = "Backup" /\ b.to = m /\ ~b.held
    /\ LET r == b.replica
           f == Fragment(m, b.ns)
           new == Update(f, b.versions, r)
       IN IF IndexOf(m) # r \/ Stale(f, b.versions, r)
          THEN /\ msgs' = msgs \ {b}
               /\ UNCHANGED <<data, versions, syncs, permits>>
          ELSE /\ data' = [data EXCEPT ![m] = (b.ns :> ((b.key :> b.value) @@ Data(m, b.ns))) @@ @]
               /\ versions' = [versions EXCEPT ![m] = (b.ns :> new) @@ @]
               /\ LET g == IF new.dirty THEN Requestable(m, {b.ns}, r) ELSE {}
                      granted == IF permits[m] > 0 THEN g ELSE {}
                  IN /\ Request(m, granted, r)
                     /\ msgs' = (msgs \ {b}) \cup RequestMsgs(m, granted, r)
    /\ action' = Step("Backup", m, b)
    /\ UNCHANGED <<alive, table, serving, destroyed, puts, losses, crashes, forked>>

\* The backup fails while applying (an exception in its run): nothing applied, the slot marked -1.
BackupFailure(m, b) ==
    /\ losses < MaxLosses
    /\ b \in msgs /\ b.type = "Backup" /\ b.to = m /\ ~b.held
    /\ IndexOf(m) = b.replica /\ ~Stale(Fragment(m, b.ns), b.versions, b.replica)
    /\ LET f == Fragment(m, b.ns)
       IN versions' = [versions EXCEPT ![m] = (b.ns :> Failed(f, b.versions, b.replica)) @@ @]
    /\ msgs' = msgs \ {b}
    /\ losses' = losses + 1
    /\ action' = Step("BackupFailure", m, b)
    /\ UNCHANGED <<alive, table, data, syncs, permits, serving, destroyed, puts, crashes, forked>>

-----------------------------------------------------------------------------
(* Anti-entropy                                                             *)

\* The owner's periodic task: drop the fragments its services no longer have, then send every
\* replica of the table its slot of every remaining fragment. The next round is scheduled once every
\* operation of this one completed (Hazelcast's task waits for their responses): one round in flight.
AntiEntropy(o) ==
    /\ o = Owner /\ o # None
    /\ \A x \in msgs : x.type # "AntiEntropy"
    /\ LET kept == [ns \in DOMAIN versions[o] \cap ServiceNamespaces(o) |-> versions[o][ns]]
       IN /\ versions' = [versions EXCEPT ![o] = kept]
          /\ msgs' = msgs \cup {[type |-> "AntiEntropy", from |-> o, to |-> table[r], replica |-> r,
                                 versions |-> [ns \in DOMAIN kept |-> kept[ns].v[r]],
                                 after |-> BackupsTo(table[r])] :
                                r \in {r \in 1..Slots : table[r] # None /\ Sends(kept)}}
    /\ action' = [name |-> "AntiEntropy", member |-> o]
    /\ UNCHANGED <<alive, table, data, syncs, permits, serving, destroyed, puts, losses, crashes, forked>>

\* Replica m checks the owner's versions (after the backups the owner sent it before: the operation is
\* not urgent and runs in order with them): rejected unless m is replica r and the sender its owner;
\* else m drops the fragments the owner did not send and requests a sync (the granted set g) of those
\* that are dirty or whose slot differs.
BackupAntiEntropy(m, a, g) ==
    /\ a \in msgs /\ a.type = "AntiEntropy" /\ a.to = m
    /\ BackupsTo(m) \cap a.after = {}
    /\ LET r == a.replica
           sent == DOMAIN a.versions
           kept == [ns \in sent |-> Fragment(m, ns)]
           behind == {ns \in sent : kept[ns].dirty \/ kept[ns].v[r] # a.versions[ns]}
       IN IF IndexOf(m) # r \/ a.from # Owner
          THEN /\ g = {}
               /\ msgs' = Released(m) \ {a}
               /\ UNCHANGED <<versions, syncs, permits>>
          ELSE /\ g \in Grants(m, behind, r)
               /\ versions' = [versions EXCEPT ![m] = kept]
               /\ Request(m, g, r)
               /\ msgs' = (Released(m) \ {a}) \cup RequestMsgs(m, g, r)
    /\ action' = [name |-> "BackupAntiEntropy", member |-> m, msg |-> a, granted |-> g]
    /\ UNCHANGED <<alive, table, serving, data, destroyed, puts, losses, crashes, forked>>

-----------------------------------------------------------------------------
(* Replica sync                                                             *)

RetryTo(o, t, r, nss) == [type |-> "SyncRetry", from |-> o, to |-> t, replica |-> r, namespaces |-> nss]

\* Member o takes a sync request: not the owner, or no free permit - a retry for all; else it takes a
\* permit for each namespace of the granted set g and replicates them offloaded (SyncSend), the rest
\* get a retry.
SyncRequest(o, q, g) ==
    /\ q \in msgs /\ q.type = "SyncRequest" /\ q.to = o
    /\ IF o # Owner \/ permits[o] = 0
       THEN /\ g = {}
            /\ msgs' = (msgs \ {q}) \cup {RetryTo(o, q.from, q.replica, q.namespaces)}
            /\ UNCHANGED <<permits, serving>>
       ELSE /\ g \in {s \in SUBSET q.namespaces : Cardinality(s) = Min2(permits[o], Cardinality(q.namespaces))}
            /\ permits' = [permits EXCEPT ![o] = @ - Cardinality(g)]
            /\ serving' = [serving EXCEPT ![o] = Plus(@, {<<q.from, q.replica, ns>> : ns \in g})]
            /\ msgs' = (msgs \ {q}) \cup (IF q.namespaces \ g = {} THEN {}
                                           ELSE {RetryTo(o, q.from, q.replica, q.namespaces \ g)})
    /\ action' = [name |-> "SyncRequest", member |-> o, msg |-> q, granted |-> g]
    /\ UNCHANGED <<alive, table, data, versions, syncs, destroyed, puts, losses, crashes, forked>>

\* The offloaded replication of namespace ns for replica r of member t is sent: the namespace's data and
\* the owner's vector - or, for a namespace empty on the owner, a retry; the permit comes back. A
\* member that left gets nothing.
SyncSend(o, t, r, ns) ==
    /\ <<t, r, ns>> \in DOMAIN serving[o]
    /\ LET sent == IF Data(o, ns) = <<>> THEN RetryTo(o, t, r, {ns})
                   ELSE [type |-> "SyncResponse", from |-> o, to |-> t, replica |-> r, ns |-> ns,
                         data |-> Data(o, ns), versions |-> Fragment(o, ns).v]
       IN msgs' = IF t \in alive THEN msgs \cup {sent} ELSE msgs
    /\ versions' = [versions EXCEPT ![o] = (ns :> Fragment(o, ns)) @@ @]
    /\ permits' = [permits EXCEPT ![o] = @ + 1]
    /\ serving' = [serving EXCEPT ![o] = Minus(@, <<t, r, ns>>)]
    /\ action' = [name |-> "SyncSend", member |-> o, to |-> t, replica |-> r, ns |-> ns]
    /\ UNCHANGED <<alive, table, data, syncs, destroyed, puts, losses, crashes, forked>>

\* Replica m runs a sync response: installed if m is still replica r (data replaced, versions set
\* from r upward, dirty cleared); otherwise its operations fail. Either way the request is cleared,
\* and a member that is no replica at all clears its versions of the namespace.
SyncResponse(m, p) ==
    /\ p \in msgs /\ p.type = "SyncResponse" /\ p.to = m
    /\ LET r == p.replica
       IN /\ IF IndexOf(m) = r
             THEN /\ data' = [data EXCEPT ![m] = (p.ns :> p.data) @@ @]
                  /\ versions' = [versions EXCEPT ![m] = (p.ns :> Installed(p.versions, r)) @@ @]
                  /\ forked' = [forked EXCEPT ![m] = @ \ {p.ns}]
             ELSE /\ versions' = IF IndexOf(m) < 0 THEN [versions EXCEPT ![m] = (p.ns :> Fresh) @@ @]
                                 ELSE versions
                  /\ UNCHANGED <<data, forked>>
          /\ ClearRequests(m, {p.ns}, r)
    /\ msgs' = msgs \ {p}
    /\ action' = Step("SyncResponse", m, p)
    /\ UNCHANGED <<alive, table, serving, destroyed, puts, losses, crashes>>

\* Replica m runs a retry response: its requests for those namespaces are cleared (permits back);
\* the next anti-entropy round asks again.
SyncRetry(m, t) ==
    /\ t \in msgs /\ t.type = "SyncRetry" /\ t.to = m
    /\ ClearRequests(m, t.namespaces, t.replica)
    /\ msgs' = msgs \ {t}
    /\ action' = Step("SyncRetry", m, t)
    /\ UNCHANGED <<alive, table, serving, data, versions, destroyed, puts, losses, crashes, forked>>

\* A request times out (partition.migration.timeout): its permit comes back; a late response is still
\* installed, and frees nothing.
SyncTimeout(m, ns, r) ==
    /\ <<ns, r>> \in syncs[m]
    /\ syncs' = [syncs EXCEPT ![m] = @ \ {<<ns, r>>}]
    /\ permits' = [permits EXCEPT ![m] = @ + 1]
    /\ action' = [name |-> "SyncTimeout", member |-> m, ns |-> ns, replica |-> r]
    /\ UNCHANGED <<alive, table, serving, data, versions, msgs, destroyed, puts, losses, crashes, forked>>

-----------------------------------------------------------------------------
(* Network, membership, data structures                                     *)

\* The network loses a backup (Hazelcast's tests drop backup packets; a lost sync message is modelled
\* by its timeout).
Drop(x) ==
    /\ losses < MaxLosses
    /\ x \in msgs /\ x.type = "Backup"
    /\ msgs' = msgs \ {x}
    /\ losses' = losses + 1
    /\ action' = [name |-> "Drop", msg |-> x]
    /\ UNCHANGED <<alive, table, data, versions, syncs, permits, serving, destroyed, puts, crashes, forked>>

\* The replica a crash of the owner promotes: the surviving replica with the smallest index.
Promoted(m) == Min({i \in 1..Slots : table[i] \notin {None, m}})

\* The namespaces in which member n holds an update promoted member p never applied (a value is the
\* number of its put, so a newer one is larger): the new owner's lineage will not have it (ghost
\* bookkeeping for VersionsMeanData).
AheadOf(n, p) ==
    {ns \in DOMAIN data[n] : \E k \in DOMAIN data[n][ns] :
                               k \notin DOMAIN Data(p, ns) \/ Data(p, ns)[k] < data[n][ns][k]}

\* A member crashes: its memory is lost, messages to and from it are lost. If it owned the partition,
\* the replica with the smallest surviving index c becomes owner, its vectors shifted (slots 1..c-1
\* take slot c's value), and every request to the old owner is cancelled (permits back); a backup's
\* index is vacated.
Crash(m) ==
    /\ m \in alive
    /\ crashes < MaxCrashes
    /\ m = Owner => \E i \in 1..Slots : table[i] \notin {None, m}
    /\ alive' = alive \ {m}
    /\ msgs' = {x \in msgs : x.to # m /\ x.from # m}
    /\ IF m = Owner
       THEN LET c == Promoted(m)
                p == table[c]
                old == versions[p]
            IN /\ table' = [table EXCEPT ![0] = p, ![c] = None]
               /\ versions' = [versions EXCEPT ![m] = <<>>,
                                   ![p] = [ns \in DOMAIN old |-> [old[ns] EXCEPT !.v = Shift(old[ns].v, c)]]]
               /\ syncs' = [n \in Members |-> {}]
               /\ permits' = [n \in Members |-> MaxParallel]
               /\ forked' = [n \in Members |-> IF n \in Replicas \ {m, p} THEN forked[n] \cup AheadOf(n, p)
                                               ELSE IF n = m THEN {} ELSE forked[n]]
       ELSE /\ table' = [i \in Indexes |-> IF table[i] = m THEN None ELSE table[i]]
            /\ versions' = [versions EXCEPT ![m] = <<>>]
            /\ syncs' = [syncs EXCEPT ![m] = {}]
            /\ permits' = [permits EXCEPT ![m] = MaxParallel]
            /\ forked' = [forked EXCEPT ![m] = {}]
    /\ data' = [data EXCEPT ![m] = <<>>]
    /\ serving' = [serving EXCEPT ![m] = <<>>]
    /\ crashes' = crashes + 1
    /\ action' = [name |-> "Crash", member |-> m]
    /\ UNCHANGED <<destroyed, puts, losses>>

\* A crashed member starts again, empty, and joins the cluster (no replica until a migration).
Join(m) ==
    /\ m \in Members \ alive
    /\ alive' = alive \cup {m}
    /\ action' = [name |-> "Join", member |-> m]
    /\ UNCHANGED <<table, data, versions, syncs, permits, serving, msgs, destroyed, puts, losses, crashes, forked>>

\* The master fills vacant replica index i with live member m (a joiner, or a replica shifted up from a
\* larger index) by a copy migration from the owner: its data (for i <= BackupCount) and vectors from
\* i upward, dirty cleared.
Migrate(m, i) ==
    /\ Owner # None
    /\ i \in 1..Slots /\ table[i] = None
    /\ m \in alive /\ m # Owner /\ (IndexOf(m) = -1 \/ IndexOf(m) > i)
    /\ table' = [j \in Indexes |-> IF j = i THEN m ELSE IF table[j] = m THEN None ELSE table[j]]
    /\ data' = [data EXCEPT ![m] = IF i <= BackupCount THEN data[Owner] ELSE @]
    /\ versions' = [versions EXCEPT ![m] = [ns \in DOMAIN versions[Owner] |-> Installed(versions[Owner][ns].v, i)]]
    /\ forked' = [forked EXCEPT ![m] = IF i <= BackupCount THEN {} ELSE @]
    /\ action' = [name |-> "Migrate", member |-> m, replica |-> i]
    /\ UNCHANGED <<alive, syncs, permits, serving, msgs, destroyed, puts, losses, crashes>>

\* A map is destroyed: every member drops its data at once; version tables keep the fragment until
\* anti-entropy drops it.
Destroy(ns) ==
    /\ ns \in Maps \ destroyed
    /\ destroyed' = destroyed \cup {ns}
    /\ data' = [m \in Members |-> [x \in DOMAIN data[m] \ {ns} |-> data[m][x]]]
    /\ forked' = [m \in Members |-> forked[m] \ {ns}]
    /\ action' = [name |-> "Destroy", ns |-> ns]
    /\ UNCHANGED <<alive, table, versions, syncs, permits, serving, msgs, puts, losses, crashes>>

-----------------------------------------------------------------------------

Receive(m) ==
    \/ \E x \in msgs :
        \/ Backup(m, x) \/ BackupFailure(m, x) \/ SyncResponse(m, x) \/ SyncRetry(m, x)
        \/ \E g \in SUBSET Namespaces : BackupAntiEntropy(m, x, g) \/ SyncRequest(m, x, g)
    \/ \E t \in Members, r \in 1..Slots, ns \in Namespaces : SyncSend(m, t, r, ns)

Next ==
    \/ \E ns \in Namespaces, k \in Keys : Put(ns, k)
    \/ \E m \in Members : Receive(m) \/ AntiEntropy(m) \/ Crash(m) \/ Join(m)
    \/ \E m \in Members, ns \in Namespaces, r \in 1..Slots : SyncTimeout(m, ns, r)
    \/ \E m \in Members, i \in 1..Slots : Migrate(m, i)
    \/ \E x \in msgs : Drop(x)
    \/ \E ns \in Maps : Destroy(ns)

Spec == Init /\ [][Next]_vars

\* Fairness for the liveness model: every member eventually takes each kind of message meant for it,
\* runs its anti-entropy task, times its requests out and is migrated to a vacant index. Losses,
\* failures, crashes, joins, puts and destroys are not forced.
Fairness ==
    \A m \in Members :
        /\ WF_vars(\E b \in msgs : Backup(m, b))
        /\ WF_vars(\E a \in msgs, g \in SUBSET Namespaces : BackupAntiEntropy(m, a, g))
        /\ WF_vars(\E q \in msgs, g \in SUBSET Namespaces : SyncRequest(m, q, g))
        /\ WF_vars(\E t \in Members, r \in 1..Slots, ns \in Namespaces : SyncSend(m, t, r, ns))
        /\ WF_vars(\E p \in msgs : SyncResponse(m, p))
        /\ WF_vars(\E t \in msgs : SyncRetry(m, t))
        /\ WF_vars(AntiEntropy(m))
        /\ WF_vars(\E ns \in Namespaces, r \in 1..Slots : SyncTimeout(m, ns, r))
        /\ \A i \in 1..Slots : WF_vars(Migrate(m, i))

LiveSpec == Spec /\ Fairness

-----------------------------------------------------------------------------
(* Invariants and properties                                                *)

\* Versions stay between the "requires sync" marker and the number of puts.
Vector == [1..Slots -> -1..MaxPuts]

TypeOK ==
    /\ alive \subseteq Members /\ alive # {}
    /\ table \in [Indexes -> Members \cup {None}]
    /\ \A i, j \in Indexes : table[i] = table[j] /\ table[i] # None => i = j
    /\ Replicas \subseteq alive
    /\ \A m \in Members : DOMAIN versions[m] \subseteq Namespaces /\ DOMAIN data[m] \subseteq Namespaces
    /\ \A m \in Members : \A ns \in DOMAIN versions[m] : versions[m][ns].v \in Vector
    /\ \A m \in Members : syncs[m] \subseteq Namespaces \X (1..Slots) /\ permits[m] \in Nat
    /\ \A m \in Members : DOMAIN serving[m] \subseteq Members \X (1..Slots) \X Namespaces
    /\ \A x \in msgs : x.type \in {"Backup", "AntiEntropy", "SyncRequest", "SyncResponse", "SyncRetry"}
    /\ \A m \in Members : forked[m] \subseteq Namespaces
    /\ destroyed \subseteq Maps /\ puts <= MaxPuts /\ losses <= MaxLosses /\ crashes <= MaxCrashes

\* Permits are conserved: every permit is free or held by one request in flight; none leaks on a retry
\* or a timeout, none is freed twice.
PermitsConserved == \A m \in Members : permits[m] + Cardinality(syncs[m]) + Serving(m) = MaxParallel

\* Version equality means data equality - what makes anti-entropy sound: a backup replica r within the
\* backup count whose slot r equals the owner's, neither dirty nor marked, holds the owner's data of that
\* namespace. Excepted: a destroyed map's leftovers, and a replica forked by a promotion - it applied
\* backups the promoted owner never got, and the new owner's next puts reuse those version numbers for
\* other data (the vectors carry no epoch), so equal versions no longer say anything.
VersionsMeanData ==
    \A m \in alive, ns \in Namespaces \ destroyed :
        LET r == IndexOf(m)
        IN (/\ Owner # None /\ r \in 1..BackupCount /\ ns \notin forked[m]
            /\ ns \in DOMAIN versions[m] /\ ns \in DOMAIN versions[Owner]
            /\ ~versions[m][ns].dirty /\ ~versions[Owner][ns].dirty
            /\ versions[m][ns].v[r] # -1
            /\ versions[m][ns].v[r] = versions[Owner][ns].v[r])
           => Data(m, ns) = Data(Owner, ns)

\* A backup never goes back: the version of a replica's own slot never decreases while it keeps its
\* index, except by an explicit sync (or a migration), a clear, or the "requires sync" mark.
BackupNeverGoesBack ==
    [][\A m \in Members, ns \in Namespaces :
         LET r == IndexOf(m)
         IN (/\ m \in alive /\ m \in alive' /\ r >= 1 /\ IndexOf(m)' = r
             /\ ns \in DOMAIN versions[m] /\ ns \in DOMAIN versions'[m]
             /\ action'.name \notin {"SyncResponse", "Migrate", "BackupFailure"})
            => versions'[m][ns].v[r] >= versions[m][ns].v[r]]_vars

\* Backups never go back in data either: a member's value of a key only grows (a value is its put's
\* number), except when a sync or a migration installs the owner's data or a map is destroyed.
DataNeverGoesBack ==
    [][\A m \in Members, ns \in Namespaces :
         (/\ m \in alive /\ m \in alive' /\ ns \in DOMAIN data[m]
          /\ action'.name \notin {"SyncResponse", "Migrate", "Destroy"})
         => /\ ns \in DOMAIN data'[m]
            /\ \A k \in DOMAIN data[m][ns] : k \in DOMAIN data'[m][ns] /\ data'[m][ns][k] >= data[m][ns][k]]_vars

\* A skipped update leaves the replica dirty or marked until a sync repairs it: a Backup that jumps
\* leaves the fragment dirty, a failed one leaves the slot at -1, and both marks go only by a sync
\* response or a migration (or with the fragment itself).
SkipMarked ==
    [][/\ action'.name = "Backup" =>
            LET b == action'.msg
                r == b.replica
                before == IF b.ns \in DOMAIN versions[b.to] THEN versions[b.to][b.ns].v[r] ELSE 0
            IN (IndexOf(b.to) = r /\ before # -1 /\ b.versions[r] > before + 1) => versions'[b.to][b.ns].dirty
       /\ action'.name = "BackupFailure" => versions'[action'.member][action'.msg.ns].v[action'.msg.replica] = -1
       /\ \A m \in Members, ns \in Namespaces :
            LET r == IndexOf(m)
                marked(vs) == vs[m][ns].dirty \/ (r >= 1 /\ vs[m][ns].v[r] = -1)
            IN (/\ m \in alive /\ m \in alive' /\ r >= 1 /\ IndexOf(m)' = r
                /\ ns \in DOMAIN versions[m] /\ ns \in DOMAIN versions'[m]
                /\ marked(versions) /\ ~marked(versions'))
               => action'.name \in {"SyncResponse", "Migrate"}]_vars

\* After a promotion from index c, the new owner's vectors are its old ones with slots 1..c-1 set to
\* slot c's value (Hazelcast's PromotionCommit); no other member's vectors change.
PromotionShiftsVersions ==
    [][(action'.name = "Crash" /\ action'.member = Owner) =>
         LET p == Owner'
             c == IndexOf(p)
         IN /\ DOMAIN versions'[p] = DOMAIN versions[p]
            /\ \A ns \in DOMAIN versions[p], i \in 1..Slots :
                 versions'[p][ns].v[i] = IF i < c THEN versions[p][ns].v[c] ELSE versions[p][ns].v[i]
            /\ \A n \in alive' \ {p} : versions'[n] = versions[n]]_vars

\* Liveness, once losses and crashes stopped: every backup replica within the backup count converges
\* to its owner (same data and versions from its index upward, not dirty), every permit is back, and
\* no version table keeps a destroyed map.
Converged ==
    /\ \A m \in Members : syncs[m] = {} /\ serving[m] = <<>>
    /\ \A m \in Replicas : DOMAIN versions[m] \cap destroyed = {}
    /\ \A m \in Replicas :
        LET r == IndexOf(m)
        IN r \in 1..BackupCount /\ Owner # None =>
             \A ns \in DOMAIN versions[Owner] :
                /\ ns \in DOMAIN versions[m] /\ ~versions[m][ns].dirty
                /\ Data(m, ns) = Data(Owner, ns)
                /\ \A i \in r..Slots : versions[m][ns].v[i] = versions[Owner][ns].v[i]

Convergence == <>[]Converged
=============================================================================
