package tidemark.ignite;

import com.google.gson.JsonObject;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.ignite.IgniteCache;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.processors.cache.transactions.TransactionProxyImpl;
import org.apache.ignite.transactions.Transaction;
import org.apache.ignite.transactions.TransactionConcurrency;
import org.apache.ignite.transactions.TransactionIsolation;

/**
 * The client's transactions, one thread each (Ignite binds a transaction to its thread). Every phase is
 * submitted to that thread and returns at once or after a short wait: a held message may keep a phase
 * pending until the test releases it.
 */
final class Txs {
    /** One pessimistic transaction and its thread. */
    private static final class Tx {
        final ExecutorService thread;
        Transaction tx;
        Future<?> last;
        String phase = "started";
        String error;

        Tx(String name) {
            thread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "tx-" + name);
                t.setDaemon(true);
                return t;
            });
        }
    }

    private final Map<String, Tx> txs = new LinkedHashMap<>();
    private final MessageControl control;

    Txs(MessageControl control) {
        this.control = control;
    }

    /** TxStart + Lock: begin on the client, write the keys (pessimistic: locks taken on the primaries). */
    synchronized JsonObject begin(IgniteEx client, String name, Map<Integer, String> writes, long waitMs) {
        if (txs.containsKey(name))
            throw new IllegalArgumentException("transaction " + name + " already exists");
        Tx t = new Tx(name);
        txs.put(name, t);
        IgniteCache<Integer, String> cache = client.cache(ClusterSetup.CACHE);
        t.last = t.thread.submit(() -> {
            t.tx = client.transactions().txStart(TransactionConcurrency.PESSIMISTIC,
                TransactionIsolation.REPEATABLE_READ);
            control.nameTx(((TransactionProxyImpl<?, ?>)t.tx).tx().nearXidVersion(), name);
            closingOnFailure(t, tx -> cache.putAll(writes)); // one lock request per primary, as TxStart
            t.phase = "locked";
            return null;
        });
        return await(name, t, waitMs);
    }

    /** An application closes a transaction whose operation failed (try-with-resources): it rolls back, and
     * the servers' tx recovery, which asks the client, learns it will never commit. */
    private static void closingOnFailure(Tx t, Step step) throws Exception {
        try {
            step.run(t.tx);
        }
        catch (Exception e) {
            try {
                t.tx.close();
            }
            catch (Exception ignored) {
                // The rollback's own failure changes nothing: the operation's error is reported.
            }
            throw e;
        }
    }

    /** A step run on the transaction's thread; `phase` is its name once done. */
    private interface Step {
        void run(Transaction tx) throws Exception;
    }

    private JsonObject phase(String name, String phase, Step step, long waitMs) {
        Tx t = get(name);
        t.last = t.thread.submit(() -> {
            closingOnFailure(t, step);
            t.phase = phase;
            return null;
        });
        return await(name, t, waitMs);
    }

    /** TxPrepare: the near prepare (the primary reserves counters and prepares the backups). */
    synchronized JsonObject prepare(String name, long waitMs) {
        return phase(name, "prepared", tx -> ((TransactionProxyImpl<?, ?>)tx).tx().prepareNearTxLocal().get(), waitMs);
    }

    /** TxCommit: commit (prepares first if not prepared yet). */
    synchronized JsonObject commit(String name, long waitMs) {
        return phase(name, "committed", Transaction::commit, waitMs);
    }

    /** TxRollback. */
    synchronized JsonObject rollback(String name, long waitMs) {
        return phase(name, "rolledBack", Transaction::rollback, waitMs);
    }

    /** Waits for the transaction's last phase. */
    synchronized JsonObject await(String name, long waitMs) {
        return await(name, get(name), waitMs);
    }

    private Tx get(String name) {
        Tx t = txs.get(name);
        if (t == null)
            throw new IllegalArgumentException("no transaction " + name);
        if (t.error != null)
            throw new IllegalStateException("transaction " + name + " failed: " + t.error);
        return t;
    }

    private JsonObject await(String name, Tx t, long waitMs) {
        try {
            t.last.get(waitMs, TimeUnit.MILLISECONDS);
        }
        catch (TimeoutException e) {
            // Still pending: a held message keeps it waiting.
        }
        catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            t.error = cause.getClass().getSimpleName() + ": " + cause.getMessage();
            t.phase = "failed";
        }
        return json(name, t);
    }

    private static JsonObject json(String name, Tx t) {
        JsonObject o = new JsonObject();
        o.addProperty("tx", name);
        o.addProperty("phase", t.phase);
        o.addProperty("done", t.last.isDone());
        if (t.tx != null)
            o.addProperty("state", String.valueOf(t.tx.state()));
        if (t.error != null)
            o.addProperty("error", t.error);
        return o;
    }

    synchronized JsonObject all() {
        JsonObject o = new JsonObject();
        txs.forEach((name, t) -> o.add(name, json(name, t)));
        return o;
    }

    synchronized void shutdown() {
        txs.values().forEach(t -> t.thread.shutdownNow());
        txs.clear();
    }
}
