--------------------------- MODULE TxCountersFixed ---------------------------
(***************************************************************************)
(* A proposed fix for a way Ignite 2.18 hands out a rolled-back counter    *)
(* range again (docs/findings/rollback-range-reused.md, reproduced on a    *)
(* real cluster; docs/pme.md, section 9). A backup B1 applies the rollback *)
(* of t1's range (LWM up, rollback record); the other backup B2 has t1     *)
(* prepared when the primary and B1 fail. Tx recovery rolls t1 back on B2  *)
(* without applying its counters, finalize finds no hole above them, the   *)
(* new primary B2 reserves the same range for t2, and B1 comes back with   *)
(* an LWM equal to B2's: never rebalanced, without t2's acknowledged       *)
(* writes.                                                                 *)
(*                                                                         *)
(* The fix: a backup rolling back a recovered transaction applies its      *)
(* range, update(start, delta) and a rollback record, exactly as for a     *)
(* rollback the primary sent. Every survivor that holds the transaction    *)
(* prepared then closes the range, the exchange's maximum LWM covers it    *)
(* and the new primary reserves above it. Safe: recovery rolls back only   *)
(* what no copy committed (the near node never decided commit).            *)
(*                                                                         *)
(* A model selects it with a definition override, as the bug zoo selects  *)
(* a bug:                                                                  *)
(*     CONSTANT RecoveredRollbackCloses <- ClosingRecoveredRanges          *)
(* (spec/TxCounters-deep.cfg); impl/cluster.py's Fix.RECOVERY_CLOSES_RANGE *)
(* is the same change, and conformance replays this module's models on it. *)
(***************************************************************************)
EXTENDS TxCounters

ClosingRecoveredRanges == TRUE
=============================================================================
