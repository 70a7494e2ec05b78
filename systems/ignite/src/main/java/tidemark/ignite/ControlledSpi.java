package tidemark.ignite;

import java.util.UUID;
import org.apache.ignite.cluster.ClusterNode;
import org.apache.ignite.internal.managers.communication.GridIoMessage;
import org.apache.ignite.lang.IgniteRunnable;
import org.apache.ignite.plugin.extensions.communication.Message;
import org.apache.ignite.spi.communication.CommunicationListener;
import org.apache.ignite.spi.communication.tcp.TcpCommunicationSpi;

/**
 * The public TCP communication SPI with one hook on the receiving side: every message a node receives
 * passes through the shared {@link MessageControl} before Ignite sees it, which lets it through, holds it
 * for a later release, or drops it. Holding at the receiver is what a network does: a message the sender
 * sent before it failed still arrives (when released), and one to a node that failed is lost with it.
 */
final class ControlledSpi extends TcpCommunicationSpi {
    private final String node;
    private final MessageControl control;

    ControlledSpi(String node, MessageControl control) {
        this.node = node;
        this.control = control;
    }

    @Override public void setListener(CommunicationListener<Message> lsnr) {
        super.setListener(lsnr == null ? null : new CommunicationListener<Message>() {
            @Override public void onMessage(UUID sender, Message msg, IgniteRunnable msgC) {
                Message inner = msg instanceof GridIoMessage ? ((GridIoMessage)msg).message() : msg;
                String from = control.nodeName(sender, () -> {
                    ClusterNode n = getSpiContext().node(sender);
                    return n == null ? null : String.valueOf(n.consistentId());
                });
                if (control.intercept(from, node, inner, () -> lsnr.onMessage(sender, msg, msgC)))
                    lsnr.onMessage(sender, msg, msgC);
            }

            @Override public void onDisconnected(UUID sender) {
                lsnr.onDisconnected(sender);
            }
        });
    }
}
