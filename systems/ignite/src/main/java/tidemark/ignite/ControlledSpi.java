package tidemark.ignite;

import org.apache.ignite.IgniteException;
import org.apache.ignite.cluster.ClusterNode;
import org.apache.ignite.internal.managers.communication.GridIoMessage;
import org.apache.ignite.lang.IgniteInClosure;
import org.apache.ignite.plugin.extensions.communication.Message;
import org.apache.ignite.spi.IgniteSpiException;
import org.apache.ignite.spi.communication.tcp.TcpCommunicationSpi;

/**
 * The public TCP communication SPI with one hook: every message a node sends passes through the shared
 * {@link MessageControl} first, which lets it through, holds it for a later release, or drops it.
 */
final class ControlledSpi extends TcpCommunicationSpi {
    private final String node;
    private final MessageControl control;

    ControlledSpi(String node, MessageControl control) {
        this.node = node;
        this.control = control;
    }

    @Override public void sendMessage(ClusterNode dest, Message msg, IgniteInClosure<IgniteException> ackC)
        throws IgniteSpiException {
        Message inner = msg instanceof GridIoMessage ? ((GridIoMessage)msg).message() : msg;
        String to = String.valueOf(dest.consistentId());
        if (control.intercept(this, node, to, inner, () -> super.sendMessage(dest, msg, ackC)))
            super.sendMessage(dest, msg, ackC);
    }

    @Override public void sendMessage(ClusterNode dest, Message msg) throws IgniteSpiException {
        sendMessage(dest, msg, null);
    }
}
