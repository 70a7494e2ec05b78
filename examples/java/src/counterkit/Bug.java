package counterkit;

/** Deliberately broken variants (the bug zoo's counter classes, docs/bugzoo.md), chosen by --bug NAME. */
enum Bug {
    NONE("none"),
    /** update moves lwm to the end of the range, over any hole. */
    NO_OUT_OF_ORDER_TRACKING("no-out-of-order-tracking"),
    /** the exchange's absolute update leaves hwm where it was. */
    STALE_HWM_AFTER_SWITCH("stale-hwm-after-switch"),
    /** a restarted counter believes it is sequential up to its highest applied counter. */
    GAPS_NOT_PERSISTED("gaps-not-persisted"),
    /** the node-left exchange does not close the survivors' holes. */
    NODE_LEFT_WITHOUT_FINALIZE("node-left-without-finalize"),
    /** TxCounters: a backup reserves a range of its own at prepare instead of taking the primary's counters. */
    BACKUP_RESERVES_OWN_RANGE("backup-reserves-own-range"),
    /** TxCounters: a node commits a transaction only after those prepared with lower counters. */
    COMMIT_IN_PREPARE_ORDER("commit-in-prepare-order"),
    /** TxCounters: rollback releases the locks but leaves the range open (no update, no rollback record). */
    ROLLBACK_LEAVES_RANGE_OPEN("rollback-leaves-range-open");

    final String label;

    Bug(String label) {
        this.label = label;
    }

    static Bug named(String label) {
        for (Bug bug : values()) {
            if (bug.label.equals(label)) {
                return bug;
            }
        }
        throw new IllegalArgumentException("no bug named " + label);
    }
}
