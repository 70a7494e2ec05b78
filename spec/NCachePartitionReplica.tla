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
(* Split-brain: the network cuts one member off (Split); the rest - the   *)
(* larger side, or on a tie the side whose coordinator has the lowest      *)
(* address - goes on as if it had left abruptly, while the loser goes on   *)
(* serving its clients alone (LoserWrite); when connectivity returns the   *)
(* loser restarts and its data is discarded (Merge).                       *)
(*                                                                         *)
(* Loss windows NCache documents, checked as known violations of           *)
(* AckedWritesSurvive (one model each, see the -loss-*.cfg files and       *)
(* docs/ncache.md): asynchronous replication and an abrupt leave; a second *)
(* leave while the first leave's buckets are still served from a replica;  *)
(* the writes a split-brain loser acknowledged.                            *)
(*                                                                         *)
(* Simplifications: nodes join once, in the order n1, n2, ...; a join is   *)
(* admitted when every bucket is functional; a bucket is copied in one     *)
(* step; the replica rebuild at a membership change is one step; a split   *)
(* cuts off one member, which does not rejoin; a bucket                    *)
(* owned by the leaver that was in transfer is orphaned like the others    *)
(* (NCache 5.x); the weight is the number of entries (NCache: bytes).      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    NodeCount,    \* nodes n1 .. nN, joining in that order, e.g. 3
    BucketCount,  \* buckets 0 .. BucketCount - 1, e.g. 3 (NCache: 1000)
    Keys,         \* integer keys (their own hash) a write may hit, e.g. {0, 2147483647}: bucket 0 and the last
    Sync,         \* TRUE: synchronous replication; FALSE: asynchronous
    MaxWrites,    \* writes (acknowledged or failed) in a behavior; write n writes value n, e.g. 2
    MaxLeaves,    \* leaves (graceful or abrupt) in a behavior, e.g. 1
    MaxSplits     \* split-brains in a behavior (one member cut off each), e.g. 0

ASSUME /\ NodeCount \in Nat \ {0} /\ BucketCount \in Nat \ {0} /\ Keys # {}
       /\ \A k \in Keys : k \in 0..2147483647
       /\ Sync \in BOOLEAN /\ MaxWrites \in Nat /\ MaxLeaves \in Nat /\ MaxSplits \in Nat

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
    cut,      \* the member a split-brain cut off (the loser, serving alone), or "none"
    cutStore, \* cutStore[k]: the value of k the cut-off member holds, 0 for none
    splits,   \* splits so far, e.g. 1
    action    \* the step taken, e.g. [name |-> "Write", key |-> 0, value |-> 1]

protocolVars == <<members, left, owner, temp, status, orphan, logged, active, replica, queue>>
splitVars == <<cut, cutStore, splits>>
vars == <<protocolVars, acked, writes, leaves, splitVars, action>>

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

\* The member (or replica) that serves bucket b's keys: the replica of a departed owner until PullOrphan,
\* else the permanent owner - also while b is in transfer (the new owner answers only once it owns b).
Route(b) == IF orphan[b] # None THEN orphan[b] ELSE owner[b]
Store(b) == IF orphan[b] # None THEN replica[orphan[b]] ELSE active[owner[b]]

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

\* What a leave does to a bucket in transfer to the leaver: it reverts to its permanent owner.
Reverts(b, x) == temp[b] = x

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
    /\ cut = None
    /\ cutStore = Empty
    /\ splits = 0
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
           holder == ReplicaHolder(r, members)
       IN /\ IF orphan[b] # None
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
    /\ orphan[BucketOf(k)] = None /\ ReplicaHolder(owner[BucketOf(k)], members) # None
    /\ writes' = writes + 1
    /\ action' = [name |-> "ReplicationFailure", key |-> k, value |-> writes + 1]
    /\ UNCHANGED <<members, left, owner, temp, status, orphan, logged, active, replica, queue, acked, leaves>>

\* Member x sends the head of its queue to its replica holder; dropped when x no longer owns the bucket
\* (the bucket moved with its data, its new replica was pulled).
Replicate(x) ==
    /\ x \in Live /\ queue[x] # <<>>
    /\ LET e == Head(queue[x])
           holder == ReplicaHolder(x, members)
       IN /\ replica' = IF holder # None /\ owner[BucketOf(e.key)] = x /\ orphan[BucketOf(e.key)] = None
                        THEN [replica EXCEPT ![holder][e.key] = e.value] ELSE replica
          /\ queue' = [queue EXCEPT ![x] = Tail(@)]
    /\ action' = [name |-> "Replicate", node |-> x]
    /\ UNCHANGED <<members, left, owner, temp, status, orphan, logged, active, acked, writes, leaves>>

-----------------------------------------------------------------------------
(* State transfer                                                           *)

\* The next node joins (when every bucket is functional): its share of buckets gets it as temporary
\* owner; replicas are re-pulled along the new chain.
Join(n) ==
    /\ n = Node(Len(members) + Cardinality(left) + 1) /\ Len(members) + Cardinality(left) < NodeCount
    /\ \A b \in Buckets : status[b] = "Functional"
    /\ LET ms == Append(members, n)
           share == BucketCount \div Len(ms)
           moving == UNION {Gives(x, share) : x \in Live}
       IN /\ members' = ms
          /\ temp' = [b \in Buckets |-> IF b \in moving THEN n ELSE None]
          /\ status' = [b \in Buckets |-> IF b \in moving THEN "NeedTransfer" ELSE "Functional"]
          /\ replica' = Rebuilt(ms, owner, orphan, replica)
    /\ action' = [name |-> "Join", node |-> n]
    /\ UNCHANGED <<left, owner, orphan, logged, active, queue, acked, writes, leaves>>

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

\* Member x departs the cluster (not the last one). Graceful: its queue is flushed to its replica holder
\* first. Buckets in transfer to x revert; x's buckets are orphaned, served from x's replica holder (those
\* already served from x's replica are lost) and handed to the members below the share.
Depart(x, graceful) ==
    /\ x \in Live /\ Len(members) > 1
    /\ LET ms == SelectSeq(members, LAMBDA y : y # x)
           holder == ReplicaHolder(x, members)
           flushed == IF graceful
                      THEN [k \in Keys |->
                               LET es == {i \in 1..Len(queue[x]) : queue[x][i].key = k
                                                                   /\ owner[BucketOf(k)] = x}
                               IN IF es = {} THEN replica[holder][k]
                                  ELSE queue[x][CHOOSE i \in es : \A j \in es : j <= i].value]
                      ELSE replica[holder]
           O == Owned(x)
           to == Reassigned(O, ms, BucketCount \div Len(ms))
           own == [b \in Buckets |-> IF b \in O THEN to[b] ELSE owner[b]]
           orph == [b \in Buckets |->
                       IF orphan[b] = x THEN None
                       ELSE IF b \in O /\ orphan[b] = None THEN holder
                       ELSE orphan[b]]
       IN /\ members' = ms
          /\ owner' = own
          /\ orphan' = orph
          /\ temp' = [b \in Buckets |-> IF b \in O \/ Reverts(b, x) THEN None ELSE temp[b]]
          /\ status' = [b \in Buckets |->
                           IF orph[b] # None THEN "NeedTransfer"
                           ELSE IF b \in O \/ Reverts(b, x) \/ orphan[b] = x THEN "Functional"
                           ELSE status[b]]
          /\ logged' = [b \in Buckets |-> IF b \in O \/ Reverts(b, x) THEN {} ELSE logged[b]]
          /\ active' = [active EXCEPT ![x] = Empty]
          /\ replica' = Rebuilt(ms, own, orph, [replica EXCEPT ![holder] = flushed])
    /\ left' = left \cup {x}
    /\ queue' = [queue EXCEPT ![x] = <<>>]

Leave(x, graceful) ==
    /\ leaves < MaxLeaves
    /\ Depart(x, graceful)
    /\ leaves' = leaves + 1
    /\ action' = [name |-> "Leave", node |-> x, graceful |-> graceful]
    /\ UNCHANGED <<acked, writes, splitVars>>

-----------------------------------------------------------------------------
(* Split-brain                                                              *)

\* The network cuts member x off. The rest - the larger sub-cluster, or on a tie the one whose coordinator
\* has the lowest address - goes on as if x had left abruptly; x, alone, goes on serving the clients
\* connected to it from what it holds.
Loses(x) == Len(members) > 2 \/ x # members[1]

Split(x) ==
    /\ cut = None /\ splits < MaxSplits /\ Loses(x)
    /\ Depart(x, FALSE)
    /\ cut' = x
    /\ cutStore' = active[x]
    /\ splits' = splits + 1
    /\ action' = [name |-> "Split", node |-> x]
    /\ UNCHANGED <<acked, writes, leaves>>

\* A client connected to the cut-off member writes k there: acknowledged.
LoserWrite(k) ==
    /\ cut # None /\ writes < MaxWrites
    /\ cutStore' = [cutStore EXCEPT ![k] = writes + 1]
    /\ acked' = [acked EXCEPT ![k] = writes + 1]
    /\ writes' = writes + 1
    /\ action' = [name |-> "LoserWrite", key |-> k, value |-> writes + 1]
    /\ UNCHANGED <<protocolVars, cut, splits, leaves>>

\* Connectivity returns: the loser restarts to rejoin the winner, its data discarded (it stays out here).
Merge ==
    /\ cut # None
    /\ cut' = None
    /\ cutStore' = Empty
    /\ action' = [name |-> "Merge", node |-> cut]
    /\ UNCHANGED <<protocolVars, splits, acked, writes, leaves>>

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
    \/ \E x \in Nodes : Replicate(x) \/ Join(x)
    \/ \E b \in Buckets : StartTransfer(b) \/ EndTransfer(b) \/ PullOrphan(b)

Next ==
    \/ Protocol /\ UNCHANGED splitVars
    \/ \E x \in Nodes : Leave(x, TRUE) \/ Leave(x, FALSE) \/ Split(x)
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
    /\ cut \in Nodes \cup {None} /\ cutStore \in [Keys -> 0..MaxWrites] /\ splits <= MaxSplits

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

\* A client operation reaches a live member: the bucket's owner, or the replica serving for it.
Routed == \A b \in Buckets : Route(b) \in Live

\* No member holds its own replica.
ReplicaElsewhere == \A x \in Live : ReplicaHolder(x, members) # x

\* Every acknowledged write is where the cluster serves its key from. Holds with synchronous replication,
\* at most one leave and no split; each loss window (the -loss-*.cfg models) breaks one of these premises.
AckedWritesSurvive == \A k \in Keys : Store(BucketOf(k))[k] = acked[k]
=============================================================================
