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
    NODE_LEFT_WITHOUT_FINALIZE("node-left-without-finalize");

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
