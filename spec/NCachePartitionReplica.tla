---------------------------- MODULE NCachePartitionReplica ----------------------------
(***************************************************************************)
(* NCache's partition-replica topology (seed 004, "Data distribution and  *)
(* replication"; peers.md facts read from NCache 5.x: DistributionManager, *)
(* the state transfer tasks and the partition-replica cluster).            *)
(*                                                                         *)
(* The key space is cut into BucketCount buckets (NCache: 1000); a key's   *)
(* bucket is its 32-bit hash divided by the bucket size ceil(2^31 /        *)
(* BucketCount) (a range split; the hash of an integer key is the key).    *)
(* The coordinator (the oldest member) keeps the distribution map: per     *)
(* bucket its permanent owner, its temporary owner (the node it is being   *)
(* moved to) and its status (Functional, NeedTransfer,                     *)
(* UnderStateTransfer).                                                    *)
(*                                                                         *)
(* Join: the first node owns every bucket. A joining node's share is       *)
(* BucketCount \div (n + 1); every member gives away the buckets it owns   *)
(* beyond that share, lightest first (weight: entries held), which get the *)
(* joiner as temporary owner. The joiner pulls them one bucket at a time:  *)
(* StartTransfer copies the bucket, operations on it meanwhile still go    *)
(* to its permanent owner and are logged there; EndTransfer replays the    *)
(* log on the new owner and only then switches the owner.                  *)
(*                                                                         *)
(* Replicas: each member's partition (the buckets it owns) has one replica *)
(* on the member that joined after it, the last member's on the first; a   *)
(* lone member has none. Synchronous replication writes the replica before *)
(* the client's acknowledgement; a failed replication undoes the write on  *)
(* both and the client gets an error (ReplicationFailure). Asynchronous    *)
(* replication queues the write on the owner; Replicate sends the head of  *)
(* the queue.                                                              *)
(*                                                                         *)
(* Leave (graceful: the queue is flushed first; abrupt: it is lost):       *)
(* buckets in transfer to the leaver revert to their permanent owner; the  *)
(* leaver's buckets are orphaned and handed round-robin to the members     *)
(* below the share BucketCount \div n (to the coordinator when none is);   *)
(* until PullOrphan merges a bucket into its new owner, the leaver's       *)
(* replica serves it. Replicas are re-pulled from their actives on every   *)
(* membership change.                                                      *)
(*                                                                         *)
(* Split-brain: the network cuts some members off (Split); the rest - the  *)
(* larger side, or on a tie the side whose coordinator has the lowest      *)
(* address - goes on as if they had left abruptly, while the loser side    *)
(* goes on serving its clients (LoserWrite); when connectivity returns the *)
(* losers restart, their data discarded (Merge), and join again (Join).    *)
(*                                                                         *)
(* Maintenance mode (StopForMaintenance): a member stopped for maintenance *)
(* keeps its buckets in the map and loses its in-memory stores (a graceful *)
(* stop: its queue is flushed first); its replica holder serves its        *)
(* buckets from the replica, unreplicated, and the partition it held as    *)
(* replica has none meanwhile. State transfer is halted: no join, leave or *)
(* split while it lasts. Three exits: the member comes back within the     *)
(* timeout and pulls its partition from its replica (MaintenanceRejoin);   *)
(* the timeout expires and a normal leave starts (MaintenanceTimeout); a   *)
(* second member fails and maintenance ends for the whole cluster - both   *)
(* depart at once (MaintenanceFailure).                                    *)
(*                                                                         *)
(* Loss windows NCache documents, checked as known violations of           *)
(* AckedWritesSurvive (one model each, see the -loss-*.cfg files and       *)
(* docs/ncache.md): asynchronous replication and an abrupt leave; a second *)
(* leave while the first leave's buckets are still served from a replica;  *)
(* the writes a split-brain loser acknowledged; a second failure during    *)
(* maintenance.                                                            *)
(*                                                                         *)
(* Simplifications: nodes join in the order n1, n2, ... and only the       *)
(* losers of a merged split join again; a join is admitted when every      *)
(* bucket is functional; a bucket is copied in one step; the replica       *)
(* rebuild at a membership change is one step; the loser side of a split   *)
(* serves from one store (what its members owned); a stop for maintenance  *)
(* is graceful and admitted only while nothing moves; a bucket owned by    *)
(* the leaver that was in transfer is orphaned like the others (NCache     *)
(* 5.x); the weight is the number of entries (NCache: bytes).              *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    NodeCount,    \* nodes n1 .. nN, joining in that order, e.g. 3
    BucketCount,  \* buckets 0 .. BucketCount - 1, e.g. 3 (NCache: 1000)
    Keys,         \* integer keys (their own hash) a write may hit, e.g. {0, 2147483647}: bucket 0 and the last
    Sync,         \* TRUE: synchronous replication; FALSE: asynchronous
    MaxWrites,    \* writes (acknowledged or failed) in a behavior; write n writes value n, e.g. 2
    MaxLeaves,    \* leaves (graceful or abrupt) in a behavior, e.g. 1
    MaxSplits,    \* split-brains in a behavior (one member cut off each), e.g. 0
    MaxMaintenance \* stops for maintenance in a behavior, e.g. 1

ASSUME /\ NodeCount \in Nat \ {0} /\ BucketCount \in Nat \ {0} /\ Keys # {}
       /\ \A k \in Keys : k \in 0..2147483647
       /\ Sync \in BOOLEAN /\ MaxWrites \in Nat /\ MaxLeaves \in Nat /\ MaxSplits \in Nat
       /\ MaxMaintenance \in Nat

VARIABLES
    members,  \* live members in join order, the coordinator first, e.g. <<"n1", "n3">>
    left,     \* members that left (they never come back), e.g. {"n2"}
    owner,    \* owner[b]: bucket b's permanent owner in the distribution map, e.g. (0 :> "n1" @@ 1 :> "n2")
    temp,     \* temp[b]: the member b is being moved to, or "none", e.g. (0 :> "n3" @@ 1 :> "none")
    status,   \* status[b]: "Functional", "NeedTransfer" or "UnderStateTransfer"
    orphan,   \* orphan[b]: the member whose replica serves b after its owner left, or "none"
    logged,   \* logged[b]: keys written on b while it is under state transfer, e.g. {0}
    active,   \* active[n][k]: the value of key k in n's active store, 0 for none, e.g. ("n1" :> (0 :> 2))
    replica,  \* replica[n][k]: the value of k in n's replica store, 0 for none
    queue,    \* queue[n]: n's asynchronous replication queue, e.g. <<[key |-> 0, value |-> 1]>>
    acked,    \* acked[k] (ghost): the last acknowledged value of k, 0 for none
    writes,   \* writes so far (the last value written), e.g. 2
    leaves,   \* leaves so far, e.g. 1
    cut,      \* the members a split-brain cut off (the loser side, serving its clients), e.g. {"n3", "n4"}
    cutStore, \* cutStore[k]: the value of k the loser side serves, 0 for none
    splits,   \* splits so far, e.g. 1
    rejoining, \* losers of a merged split that restarted and may join again, e.g. {"n3"}
    maint,    \* the member stopped for maintenance, or "none", e.g. "n3"
    maints,   \* stops for maintenance so far, e.g. 1
    action    \* the step taken, e.g. [name |-> "Write", key |-> 0, value |-> 1]

protocolVars == <<members, left, owner, temp, status, orphan, logged, active, replica, queue>>
splitVars == <<cut, cutStore, splits, rejoining>>
maintVars == <<maint, maints>>
vars == <<protocolVars, acked, writes, leaves, splitVars, maintVars, action>>

Node(i) == "n" \o ToString(i)
Nodes == {Node(i) : i \in 1..NodeCount}
None == "none"
Buckets == 0..BucketCount - 1
Live == {members[i] : i \in 1..Len(members)}

\* NCache's bucket size ceil(2^31 / BucketCount) = (2^31 - 1) \div BucketCount + 1: TLC integers end at 2^31 - 1.
BucketSize == 2147483647 \div BucketCount + 1
BucketOf(k) == k \div BucketSize

-----------------------------------------------------------------------------
(* Stores                                                                   *)

Empty == [k \in Keys |-> 0]
CopyBucket(dst, src, b) == [k \in Keys |-> IF BucketOf(k) = b THEN src[k] ELSE dst[k]]
ClearBucket(s, b) == [k \in Keys |-> IF BucketOf(k) = b THEN 0 ELSE s[k]]

\* A member's partition: the keys of the buckets it owns, as its active store holds them.
Partition(x, own) == [k \in Keys |-> IF own[BucketOf(k)] = x THEN active[x][k] ELSE 0]

\* A bucket's weight for the join's choice: the entries its permanent owner holds.
Weight(b) == Cardinality({k \in Keys : BucketOf(k) = b /\ active[owner[b]][k] # 0})

-----------------------------------------------------------------------------
(* The replica chain                                                        *)

IndexIn(ms, x) == CHOOSE i \in 1..Len(ms) : ms[i] = x

\* The member holding x's replica in membership ms: the next one to have joined, the first after the last.
ReplicaHolder(x, ms) == IF Len(ms) = 1 THEN None ELSE ms[(IndexIn(ms, x) % Len(ms)) + 1]

\* The member whose partition h holds as replica in ms.
ReplicaOf(h, ms) == IF Len(ms) = 1 THEN None ELSE ms[((IndexIn(ms, h) + Len(ms) - 2) % Len(ms)) + 1]

\* The holder of x's replica while it is up: none while the holder is stopped for maintenance.
UpHolder(x) == IF ReplicaHolder(x, members) = maint THEN None ELSE ReplicaHolder(x, members)

\* The member whose replica store serves bucket b, or "none": the replica of a departed owner until
\* PullOrphan, the replica of an owner stopped for maintenance until it comes back.
Serving(b) ==
    IF orphan[b] # None THEN orphan[b]
    ELSE IF owner[b] = maint THEN ReplicaHolder(maint, members)
    ELSE None

\* The member that serves bucket b's keys: the replica serving it, else the permanent owner - also while
\* b is in transfer (the new owner answers only once it owns b).
Route(b) == IF Serving(b) # None THEN Serving(b) ELSE owner[b]
Store(b) == IF Serving(b) # None THEN replica[Serving(b)] ELSE active[owner[b]]

\* Replica stores after a membership change to ms with map own: each re-pulled from its member's active
\* partition, except the keys of buckets it serves as an orphan holder.
Rebuilt(ms, own, orph, rep) ==
    [h \in Nodes |->
        IF h \notin {ms[i] : i \in 1..Len(ms)} THEN Empty
        ELSE LET of == ReplicaOf(h, ms)
             IN [k \in Keys |->
                    IF orph[BucketOf(k)] = h THEN rep[h][k]
                    ELSE IF of # None /\ own[BucketOf(k)] = of THEN active[of][k]
                    ELSE 0]]

-----------------------------------------------------------------------------
(* The distribution map                                                     *)

Owned(x) == {b \in Buckets : owner[b] = x}

\* b comes before c in a member's giving order: lighter first, then the lower bucket.
Before(c, b) == Weight(c) < Weight(b) \/ (Weight(c) = Weight(b) /\ c < b)

\* The buckets x gives a joiner when every member keeps `share`: its lightest ones beyond the share.
Gives(x, share) ==
    LET extra == Cardinality(Owned(x)) - share
    IN {b \in Owned(x) : Cardinality({c \in Owned(x) : Before(c, b)}) < extra}

\* The i-th smallest element of a finite set of integers (i from 1).
Ith(S, i) == CHOOSE b \in S : Cardinality({c \in S : c < b}) = i - 1

\* The new owners of the orphaned buckets O among the remaining members ms: round-robin over the members
\* below the share BucketCount \div Len(ms), in join order (counts are not updated while assigning); to
\* the coordinator when none is below.
Reassigned(O, ms, share) ==
    LET below == SelectSeq(ms, LAMBDA x : Cardinality(Owned(x) \ O) < share)
    IN [b \in O |->
           IF below = <<>> THEN ms[1]
           ELSE below[(((CHOOSE i \in 1..Cardinality(O) : Ith(O, i) = b) - 1) % Len(below)) + 1]]

\* What a leave does to a bucket in transfer to a leaver of X: it reverts to its permanent owner.
Reverts(b, X) == temp[b] \in X

\* The log replayed on the new owner before the switch: every logged key.
Replayed(b) == logged[b]

-----------------------------------------------------------------------------
(* Initial state                                                            *)

Init ==
    /\ members = <<Node(1)>>
    /\ left = {}
    /\ owner = [b \in Buckets |-> Node(1)]
    /\ temp = [b \in Buckets |-> None]
    /\ status = [b \in Buckets |-> "Functional"]
    /\ orphan = [b \in Buckets |-> None]
    /\ logged = [b \in Buckets |-> {}]
    /\ active = [n \in Nodes |-> Empty]
    /\ replica = [n \in Nodes |-> Empty]
    /\ queue = [n \in Nodes |-> <<>>]
    /\ acked = Empty
    /\ writes = 0
    /\ leaves = 0
    /\ cut = {}
    /\ cutStore = Empty
    /\ rejoining = {}
    /\ splits = 0
    /\ maint = None
    /\ maints = 0
    /\ action = [name |-> "Init"]

-----------------------------------------------------------------------------
(* Client writes and replication                                            *)

\* A write of key k reaches Route(b); logged while b is under state transfer; replicated synchronously
\* (to the owner's replica holder) or queued; acknowledged.
Write(k) ==
    /\ writes < MaxWrites
    /\ LET b == BucketOf(k)
           v == writes + 1
           r == Route(b)
           holder == UpHolder(r)
       IN /\ IF Serving(b) # None
             THEN /\ replica' = [replica EXCEPT ![r][k] = v]
                  /\ UNCHANGED <<active, queue>>
             ELSE /\ active' = [active EXCEPT ![r][k] = v]
                  /\ IF Sync /\ holder # None
                     THEN replica' = [replica EXCEPT ![holder][k] = v] /\ UNCHANGED queue
                     ELSE IF ~Sync /\ holder # None
                     THEN queue' = [queue EXCEPT ![r] = Append(@, [key |-> k, value |-> v])] /\ UNCHANGED replica
                     ELSE UNCHANGED <<replica, queue>>
          /\ logged' = IF status[b] = "UnderStateTransfer" THEN [logged EXCEPT ![b] = @ \cup {k}] ELSE logged
          /\ acked' = [acked EXCEPT ![k] = v]
          /\ writes' = v
          /\ action' = [name |-> "Write", key |-> k, value |-> v]
    /\ UNCHANGED <<members, left, owner, temp, status, orphan, leaves>>

\* Synchronous replication of a write fails on the replica: the item is removed from both, the client
\* gets an error - the stores are as before, the write's number is spent.
ReplicationFailure(k) ==
    /\ Sync /\ writes < MaxWrites
    /\ Serving(BucketOf(k)) = None /\ UpHolder(owner[BucketOf(k)]) # None
    /\ writes' = writes + 1
    /\ action' = [name |-> "ReplicationFailure", key |-> k, value |-> writes + 1]
    /\ UNCHANGED <<members, left, owner, temp, status, orphan, logged, active, replica, queue, acked, leaves>>

\* Member x sends the head of its queue to its replica holder; dropped when x no longer owns the bucket
\* (the bucket moved with its data, its new replica was pulled) or the holder is stopped for maintenance
\* (it pulls the whole partition when it comes back).
Replicate(x) ==
    /\ x \in Live /\ queue[x] # <<>>
    /\ LET e == Head(queue[x])
           holder == UpHolder(x)
       IN /\ replica' = IF holder # None /\ owner[BucketOf(e.key)] = x /\ orphan[BucketOf(e.key)] = None
                        THEN [replica EXCEPT ![holder][e.key] = e.value] ELSE replica
          /\ queue' = [queue EXCEPT ![x] = Tail(@)]
    /\ action' = [name |-> "Replicate", node |-> x]
    /\ UNCHANGED <<members, left, owner, temp, status, orphan, logged, active, acked, writes, leaves>>

-----------------------------------------------------------------------------
(* State transfer                                                           *)

\* The next node, or a restarted loser of a split, joins (when every bucket is functional): its share of
\* buckets gets it as temporary owner; replicas are re-pulled along the new chain.
Join(n) ==
    /\ \/ n = Node(Len(members) + Cardinality(left) + 1) /\ Len(members) + Cardinality(left) < NodeCount
       \/ n \in rejoining
    /\ \A b \in Buckets : status[b] = "Functional"
    /\ maint = None
    /\ LET ms == Append(members, n)
           share == BucketCount \div Len(ms)
           moving == UNION {Gives(x, share) : x \in Live}
       IN /\ members' = ms
          /\ temp' = [b \in Buckets |-> IF b \in moving THEN n ELSE None]
          /\ status' = [b \in Buckets |-> IF b \in moving THEN "NeedTransfer" ELSE "Functional"]
          /\ replica' = Rebuilt(ms, owner, orphan, replica)
    /\ left' = left \ {n}
    /\ rejoining' = rejoining \ {n}
    /\ action' = [name |-> "Join", node |-> n]
    /\ UNCHANGED <<owner, orphan, logged, active, queue, acked, writes, leaves>>

\* The temporary owner pulls bucket b: a copy of the permanent owner's data; operations are logged now.
StartTransfer(b) ==
    /\ status[b] = "NeedTransfer" /\ temp[b] # None
    /\ active' = [active EXCEPT ![temp[b]] = CopyBucket(@, active[owner[b]], b)]
    /\ status' = [status EXCEPT ![b] = "UnderStateTransfer"]
    /\ logged' = [logged EXCEPT ![b] = {}]
    /\ action' = [name |-> "StartTransfer", bucket |-> b]
    /\ UNCHANGED <<members, left, owner, temp, orphan, replica, queue, acked, writes, leaves>>

\* The log is replayed on the new owner, then the bucket is switched: the new owner owns it, its replica
\* holder pulls it, the old owner and its replica holder drop it.
EndTransfer(b) ==
    /\ status[b] = "UnderStateTransfer"
    /\ LET old == owner[b]
           new == temp[b]
           own == [owner EXCEPT ![b] = new]
           caught == [k \in Keys |-> IF k \in Replayed(b) THEN active[old][k] ELSE active[new][k]]
           act == [active EXCEPT ![new] = caught, ![old] = ClearBucket(@, b)]
           oldHolder == ReplicaHolder(old, members)
           newHolder == ReplicaHolder(new, members)
           dropped == IF oldHolder # None THEN [replica EXCEPT ![oldHolder] = ClearBucket(@, b)] ELSE replica
       IN /\ owner' = own
          /\ active' = act
          /\ replica' = IF newHolder # None
                        THEN [dropped EXCEPT ![newHolder] = CopyBucket(@, act[new], b)] ELSE dropped
    /\ temp' = [temp EXCEPT ![b] = None]
    /\ status' = [status EXCEPT ![b] = "Functional"]
    /\ logged' = [logged EXCEPT ![b] = {}]
    /\ action' = [name |-> "EndTransfer", bucket |-> b]
    /\ UNCHANGED <<members, left, orphan, queue, acked, writes, leaves>>

\* The new owner of an orphaned bucket pulls it from the replica serving it.
PullOrphan(b) ==
    /\ orphan[b] # None
    /\ LET x == owner[b]
           src == replica[orphan[b]]
           act == [active EXCEPT ![x] = CopyBucket(@, src, b)]
           holder == ReplicaHolder(x, members)
           dropped == [replica EXCEPT ![orphan[b]] = ClearBucket(@, b)]
       IN /\ active' = act
          /\ replica' = IF holder # None THEN [dropped EXCEPT ![holder] = CopyBucket(@, act[x], b)] ELSE dropped
    /\ orphan' = [orphan EXCEPT ![b] = None]
    /\ status' = [status EXCEPT ![b] = "Functional"]
    /\ action' = [name |-> "PullOrphan", bucket |-> b]
    /\ UNCHANGED <<members, left, owner, temp, logged, queue, acked, writes, leaves>>

\* What x's replica holder keeps when x departs: gracefully, x's queue is flushed to it first (the last
\* queued value of each key x still owns); abruptly, the queue is lost.
Flushed(x, graceful) ==
    LET holder == ReplicaHolder(x, members)
    IN [k \in Keys |->
           LET es == {i \in 1..Len(queue[x]) : queue[x][i].key = k /\ owner[BucketOf(k)] = x}
           IN IF ~graceful \/ es = {} THEN replica[holder][k]
              ELSE queue[x][CHOOSE i \in es : \A j \in es : j <= i].value]

\* The members X depart the cluster at once (not all of it). Buckets in transfer to a leaver revert; the
\* leavers' buckets are orphaned, served from the owner's replica holder unless it departs too (then, like
\* the buckets already served from a leaver's replica, they are lost) and handed to the members below the
\* share.
Departs(X, graceful) ==
    /\ X # {} /\ X \subseteq Live /\ Live \ X # {}
    /\ LET ms == SelectSeq(members, LAMBDA y : y \notin X)
           Holder(x) == ReplicaHolder(x, members)
           kept == [h \in Nodes |->
                       IF \E x \in X : Holder(x) = h /\ h \notin X
                       THEN Flushed(CHOOSE x \in X : Holder(x) = h, graceful)
                       ELSE replica[h]]
           O == {b \in Buckets : owner[b] \in X}
           to == Reassigned(O, ms, BucketCount \div Len(ms))
           own == [b \in Buckets |-> IF b \in O THEN to[b] ELSE owner[b]]
           orph == [b \in Buckets |->
                       IF orphan[b] \in X THEN None
                       ELSE IF b \in O /\ orphan[b] = None
                       THEN IF Holder(owner[b]) \in X THEN None ELSE Holder(owner[b])
                       ELSE orphan[b]]
       IN /\ members' = ms
          /\ owner' = own
          /\ orphan' = orph
          /\ temp' = [b \in Buckets |-> IF b \in O \/ Reverts(b, X) THEN None ELSE temp[b]]
          /\ status' = [b \in Buckets |->
                           IF orph[b] # None THEN "NeedTransfer"
                           ELSE IF b \in O \/ Reverts(b, X) \/ orphan[b] \in X THEN "Functional"
                           ELSE status[b]]
          /\ logged' = [b \in Buckets |-> IF b \in O \/ Reverts(b, X) THEN {} ELSE logged[b]]
          /\ active' = [n \in Nodes |-> IF n \in X THEN Empty ELSE active[n]]
          /\ replica' = Rebuilt(ms, own, orph, kept)
    /\ left' = left \cup X
    /\ queue' = [n \in Nodes |-> IF n \in X THEN <<>> ELSE queue[n]]

Leave(x, graceful) ==
    /\ leaves < MaxLeaves /\ maint = None
    /\ Departs({x}, graceful)
    /\ leaves' = leaves + 1
    /\ action' = [name |-> "Leave", node |-> x, graceful |-> graceful]
    /\ UNCHANGED <<acked, writes, splitVars, maintVars>>

-----------------------------------------------------------------------------
(* Split-brain                                                              *)

\* The network cuts the members X off. The rest - the larger sub-cluster, or on a tie the one whose
\* coordinator has the lowest address (the oldest member) - goes on as if X had left abruptly; X goes on
\* serving the clients connected to it from what its members owned.
Loses(X) ==
    LET rest == Len(members) - Cardinality(X)
    IN Cardinality(X) < rest \/ (Cardinality(X) = rest /\ members[1] \notin X)

Split(X) ==
    /\ cut = {} /\ splits < MaxSplits /\ maint = None /\ X \subseteq Live /\ Loses(X)
    /\ Departs(X, FALSE)
    /\ cut' = X
    /\ cutStore' = [k \in Keys |-> IF owner[BucketOf(k)] \in X THEN active[owner[BucketOf(k)]][k] ELSE 0]
    /\ splits' = splits + 1
    /\ action' = [name |-> "Split", nodes |-> X]
    /\ UNCHANGED <<acked, writes, leaves, maintVars, rejoining>>

\* A client connected to the loser side writes k there: acknowledged.
LoserWrite(k) ==
    /\ cut # {} /\ writes < MaxWrites
    /\ cutStore' = [cutStore EXCEPT ![k] = writes + 1]
    /\ acked' = [acked EXCEPT ![k] = writes + 1]
    /\ writes' = writes + 1
    /\ action' = [name |-> "LoserWrite", key |-> k, value |-> writes + 1]
    /\ UNCHANGED <<protocolVars, cut, splits, rejoining, leaves, maintVars>>

\* Connectivity returns: the losers restart, their data discarded, and may join the winner again.
Merge ==
    /\ cut # {}
    /\ cut' = {}
    /\ cutStore' = Empty
    /\ rejoining' = rejoining \cup cut
    /\ action' = [name |-> "Merge"]
    /\ UNCHANGED <<protocolVars, splits, acked, writes, leaves, maintVars>>

-----------------------------------------------------------------------------
(* Maintenance mode                                                         *)

\* Member x is stopped for maintenance (at least two members, no state transfer in progress, no split):
\* a graceful stop, its queue flushed to its replica holder; its in-memory stores are gone; its buckets
\* stay in the map, served from its replica.
StopForMaintenance(x) ==
    /\ maint = None /\ cut = {} /\ maints < MaxMaintenance
    /\ x \in Live /\ Len(members) > 1
    /\ \A b \in Buckets : status[b] = "Functional"
    /\ LET holder == ReplicaHolder(x, members)
       IN replica' = [replica EXCEPT ![holder] = Flushed(x, TRUE), ![x] = Empty]
    /\ active' = [active EXCEPT ![x] = Empty]
    /\ queue' = [queue EXCEPT ![x] = <<>>]
    /\ maint' = x
    /\ maints' = maints + 1
    /\ action' = [name |-> "StopForMaintenance", node |-> x]
    /\ UNCHANGED <<members, left, owner, temp, status, orphan, logged, acked, writes, leaves, splitVars>>

\* What x pulls when it comes back from maintenance: its partition, from its replica (with what was
\* written meanwhile).
Pulled(x) ==
    [k \in Keys |-> IF owner[BucketOf(k)] = x THEN replica[ReplicaHolder(x, members)][k] ELSE 0]

\* Exit 1: x comes back within the timeout. It pulls its partition from its replica and re-pulls the
\* replica it holds from that partition's owner.
MaintenanceRejoin(x) ==
    /\ maint = x
    /\ active' = [active EXCEPT ![x] = Pulled(x)]
    /\ replica' = [replica EXCEPT ![x] = Partition(ReplicaOf(x, members), owner)]
    /\ maint' = None
    /\ action' = [name |-> "MaintenanceRejoin", node |-> x]
    /\ UNCHANGED <<members, left, owner, temp, status, orphan, logged, queue, acked, writes, leaves,
                   maints, splitVars>>

\* Exit 2: the timeout expires without x: it is declared dead and a normal leave starts (its buckets
\* orphaned, served from its replica until pulled).
MaintenanceTimeout(x) ==
    /\ maint = x
    /\ Departs({x}, TRUE)
    /\ maint' = None
    /\ action' = [name |-> "MaintenanceTimeout", node |-> x]
    /\ UNCHANGED <<acked, writes, leaves, maints, splitVars>>

\* Exit 3: another member y fails: maintenance ends for the whole cluster, x and y depart at once. A leave
\* (MaxLeaves bounds it): the second member down, the documented window where data can be lost.
MaintenanceFailure(y) ==
    /\ maint # None /\ y # maint /\ leaves < MaxLeaves
    /\ Departs({maint, y}, FALSE)
    /\ maint' = None
    /\ leaves' = leaves + 1
    /\ action' = [name |-> "MaintenanceFailure", node |-> y]
    /\ UNCHANGED <<acked, writes, maints, splitVars>>

\* Nothing in flight: every bucket functional, every queue sent. The terminal step (a model with bounded
\* writes and leaves ends here; anything else that stops is a deadlock).
Quiet == (\A b \in Buckets : status[b] = "Functional") /\ \A x \in Nodes : queue[x] = <<>>

Done ==
    /\ Quiet
    /\ action' = [name |-> "Done"]
    /\ UNCHANGED <<members, left, owner, temp, status, orphan, logged, active, replica, queue, acked, writes,
                   leaves>>

Protocol ==
    \/ Done
    \/ \E k \in Keys : Write(k) \/ ReplicationFailure(k)
    \/ \E x \in Nodes : Replicate(x)
    \/ \E b \in Buckets : StartTransfer(b) \/ EndTransfer(b) \/ PullOrphan(b)

Next ==
    \/ Protocol /\ UNCHANGED <<splitVars, maintVars>>
    \/ \E x \in Nodes : Join(x) /\ UNCHANGED <<cut, cutStore, splits, maintVars>>
    \/ \E x \in Nodes : Leave(x, TRUE) \/ Leave(x, FALSE)
    \/ \E X \in SUBSET Nodes : Split(X)
    \/ \E x \in Nodes : StopForMaintenance(x) \/ MaintenanceRejoin(x) \/ MaintenanceTimeout(x)
                       \/ MaintenanceFailure(x)
    \/ \E k \in Keys : LoserWrite(k)
    \/ Merge

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Invariants                                                               *)

TypeOK ==
    /\ Live \subseteq Nodes /\ Live # {} /\ left \subseteq Nodes /\ Live \cap left = {}
    /\ owner \in [Buckets -> Nodes] /\ temp \in [Buckets -> Nodes \cup {None}]
    /\ orphan \in [Buckets -> Nodes \cup {None}]
    /\ status \in [Buckets -> {"Functional", "NeedTransfer", "UnderStateTransfer"}]
    /\ logged \in [Buckets -> SUBSET Keys]
    /\ active \in [Nodes -> [Keys -> 0..MaxWrites]] /\ replica \in [Nodes -> [Keys -> 0..MaxWrites]]
    /\ acked \in [Keys -> 0..MaxWrites] /\ writes <= MaxWrites /\ leaves <= MaxLeaves
    /\ cut \subseteq left /\ rejoining \subseteq left /\ cut \cap rejoining = {} /\ cutStore \in [Keys -> 0..MaxWrites] /\ splits <= MaxSplits
    /\ maint \in Nodes \cup {None} /\ maints <= MaxMaintenance

\* Every bucket has exactly one permanent owner, a live member; a temporary owner is another live member.
OneOwner ==
    \A b \in Buckets :
        /\ owner[b] \in Live
        /\ temp[b] # None => temp[b] \in Live /\ temp[b] # owner[b] /\ orphan[b] = None

\* The status says what the map holds: functional buckets are neither moving nor orphaned, only a bucket
\* under state transfer has a log.
StatusMatchesMap ==
    \A b \in Buckets :
        /\ status[b] = "Functional" <=> temp[b] = None /\ orphan[b] = None
        /\ logged[b] # {} => status[b] = "UnderStateTransfer"

\* A client operation reaches a live member that is up: the bucket's owner, or the replica serving for it.
Routed == \A b \in Buckets : Route(b) \in Live \ {maint}

\* Maintenance halts state transfer: while a member is stopped, it is a member whose stores are empty,
\* every bucket is functional and its replica holder is up.
MaintenanceHalts ==
    maint # None =>
        /\ maint \in Live /\ active[maint] = Empty /\ replica[maint] = Empty
        /\ \A b \in Buckets : status[b] = "Functional"
        /\ ReplicaHolder(maint, members) \notin {None, maint}

\* No member holds its own replica.
ReplicaElsewhere == \A x \in Live : ReplicaHolder(x, members) # x

\* Every acknowledged write is where the cluster serves its key from. Holds with synchronous replication,
\* at most one leave and no split; each loss window (the -loss-*.cfg models) breaks one of these premises.
AckedWritesSurvive == \A k \in Keys : Store(BucketOf(k))[k] = acked[k]

\* With at most one member gone (stopped for maintenance, or departed), no acknowledged write is lost: what
\* maintenance mode promises across its first two exits (the third takes a second member down).
OneDownKeepsData == Cardinality(left) <= 1 => AckedWritesSurvive
=============================================================================
