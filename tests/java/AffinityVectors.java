import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.UUID;

/**
 * Test vectors for tidemark's impl/affinity.py, computed by the JDK itself (no Ignite dependency).
 *
 * Hash codes come from Java's own Integer/Long/String/UUID/Boolean.hashCode(); partitioning and rendezvous
 * placement re-implement the algorithm Ignite documents (RendezvousAffinityFunction) with Java's int/long
 * arithmetic: % truncates, >>> is unsigned, long overflow wraps, weights compare signed, ties go to the
 * lower node id by UUID.compareTo. Prints tab-separated lines; strings travel as hex UTF-16 code units
 * joined by '.', so lone surrogates and non-BMP characters survive exactly.
 *
 * Lines: int|long|uuid|bool VALUE HASH; string UNITS HASH; partition HASH PARTS PARTITION;
 * key KIND VALUE PARTS PARTITION; weight NODEHASH PARTITION WEIGHT;
 * node SET INDEX KIND ID NODEID HOST RACK; assign SET MODE BACKUPS PARTS PARTITION OWNERS.
 */
public final class AffinityVectors {
    private static final int ALL = Integer.MAX_VALUE;  // Ignite's backups value for a replicated cache
    private static final StringBuilder OUT = new StringBuilder();

    private record Node(Object consistentId, UUID id, String host, String rack) {}

    public static void main(String[] args) {
        Random random = new Random(20240917L);
        hashes(random);
        partitions(random);
        weights(random);
        topologies(random);
        System.out.print(OUT);
    }

    private static void line(Object... fields) {
        for (int i = 0; i < fields.length; i++) {
            if (i > 0) OUT.append('\t');
            OUT.append(fields[i]);
        }
        OUT.append('\n');
    }

    private static String units(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            if (i > 0) b.append('.');
            b.append(String.format("%04x", (int) s.charAt(i)));
        }
        return b.toString();
    }

    private static String randomString(Random random, int length) {
        char[] chars = new char[length];
        for (int i = 0; i < length; i++) {
            // Mostly ASCII, some of the whole 16-bit range (lone surrogates included).
            chars[i] = random.nextInt(4) == 0 ? (char) random.nextInt(0x10000) : (char) (32 + random.nextInt(95));
        }
        return new String(chars);
    }

    private static List<String> strings(Random random) {
        List<String> all = new ArrayList<>(List.of(
            "", "a", "Aa", "BB", "Ea", "FB", "AaAa", "BBBB", "hello world", "node-0", "127.0.0.1:47500",
            "\u00ff\u20ac", "caf\u00e9", "\u65e5\u672c\u8a9e", "\ud83d\ude00", "a\ud83d\ude00b\ud800\udc00",
            "\ud800", "\udfff", "x\udc00\ud800y", "\u0000", "polygenelubricants", "GydZG_", "DESIGNING WORKHOUSES"));
        all.add("long:" + "abcdefghij".repeat(1000));
        all.add("\ud83d\ude00".repeat(500));
        for (int i = 0; i < 150; i++) {
            all.add(randomString(random, random.nextInt(40)));
        }
        return all;
    }

    private static List<Integer> ints(Random random) {
        List<Integer> all = new ArrayList<>(List.of(0, 1, -1, 2, -2, 16, 65535, 65536, -65536, -65537, 1000,
            -1000, 65000, -65000, Integer.MAX_VALUE, Integer.MIN_VALUE, Integer.MIN_VALUE + 1, Integer.MAX_VALUE - 1));
        for (int i = 0; i < 300; i++) {
            all.add(random.nextInt());
        }
        return all;
    }

    private static List<UUID> uuids(Random random) {
        List<UUID> all = new ArrayList<>(List.of(new UUID(0, 0), new UUID(-1, -1), new UUID(Long.MIN_VALUE,
            Long.MAX_VALUE), new UUID(1, -1), UUID.fromString("123e4567-e89b-12d3-a456-426614174000")));
        for (int i = 0; i < 100; i++) {
            all.add(new UUID(random.nextLong(), random.nextLong()));
        }
        return all;
    }

    private static void hashes(Random random) {
        for (int v : ints(random)) line("int", v, Integer.hashCode(v));
        List<Long> longs = new ArrayList<>(List.of(0L, 1L, -1L, 1L << 32, (1L << 32) - 1, -(1L << 32),
            (long) Integer.MIN_VALUE - 1, (long) Integer.MAX_VALUE + 1, Long.MIN_VALUE, Long.MAX_VALUE));
        for (int i = 0; i < 200; i++) longs.add(random.nextLong());
        for (long v : longs) line("long", v, Long.hashCode(v));
        for (String s : strings(random)) line("string", units(s), s.hashCode());
        for (UUID u : uuids(random)) line("uuid", u, u.hashCode());
        line("bool", true, Boolean.hashCode(true));
        line("bool", false, Boolean.hashCode(false));
    }

    /** Ignite's key -> partition for a key hash code. */
    private static int partition(int h, int parts) {
        if ((parts & (parts - 1)) == 0) {
            return (h ^ (h >>> 16)) & (parts - 1);
        }
        int r = Math.abs(h % parts);
        return r < 0 ? 0 : r;  // Math.abs(Integer.MIN_VALUE) stays negative
    }

    private static final int[] PARTS = {1, 2, 16, 1024, 32768, 3, 7, 1000, 1023, 65000, 64999};

    private static void partitions(Random random) {
        for (int h : ints(random)) {
            for (int parts : PARTS) line("partition", h, parts, partition(h, parts));
        }
        for (String s : strings(random).subList(0, 40)) {
            for (int parts : new int[] {1024, 1000}) line("key", "string", units(s), parts, partition(s.hashCode(), parts));
        }
        for (int i = 0; i < 40; i++) {
            long v = random.nextLong();
            UUID u = new UUID(random.nextLong(), random.nextLong());
            for (int parts : new int[] {1024, 1000}) {
                line("key", "long", v, parts, partition(Long.hashCode(v), parts));
                line("key", "uuid", u, parts, partition(u.hashCode(), parts));
            }
        }
    }

    /** The documented 64-bit mix of (node hash, partition); Java's long arithmetic wraps. */
    private static long weight(int nodeHash, int part) {
        long key = (nodeHash & 0xFFFFFFFFL) | ((part & 0xFFFFFFFFL) << 32);
        key = (~key) + (key << 21);
        key ^= (key >>> 24);
        key += (key << 3) + (key << 8);
        key ^= (key >>> 14);
        key += (key << 2) + (key << 4);
        key ^= (key >>> 28);
        key += (key << 31);
        return key;
    }

    private static void weights(Random random) {
        int[] edgeHashes = {0, 1, -1, Integer.MIN_VALUE, Integer.MAX_VALUE};
        int[] edgeParts = {0, 1, 1023, 32767, 64999};
        for (int h : edgeHashes) {
            for (int p : edgeParts) line("weight", h, p, weight(h, p));
        }
        for (int i = 0; i < 300; i++) {
            int h = random.nextInt();
            int p = random.nextInt(65000);
            line("weight", h, p, weight(h, p));
        }
    }

    private static List<Node> ranked(List<Node> nodes, int part) {
        List<Node> sorted = new ArrayList<>(nodes);
        sorted.sort(Comparator.<Node>comparingLong(n -> weight(n.consistentId().hashCode(), part))
            .thenComparing(Node::id));
        return sorted;
    }

    /** Primary and backups of a partition, as indices into the topology list. */
    private static List<Integer> assign(List<Node> nodes, int part, int backups, String mode) {
        List<Node> sorted = ranked(nodes, part);
        Node primary = sorted.get(0);
        List<Node> owners = new ArrayList<>(List.of(primary));
        if (backups == ALL) {
            for (Node n : nodes) if (n != primary) owners.add(n);
        } else {
            int count = Math.min(backups + 1, nodes.size());
            Set<String> hosts = new HashSet<>(List.of(primary.host()));
            for (Node candidate : sorted.subList(1, sorted.size())) {
                if (owners.size() == count) break;
                boolean accept = switch (mode) {
                    case "neighbors" -> !hosts.contains(candidate.host());
                    case "rack" -> owners.stream().noneMatch(o -> o.rack().equals(candidate.rack()));
                    default -> true;
                };
                if (accept) {
                    owners.add(candidate);
                    hosts.add(candidate.host());
                }
            }
            if (mode.equals("neighbors")) {  // second pass: too few hosts, neighbours allowed
                for (Node candidate : sorted.subList(1, sorted.size())) {
                    if (owners.size() == count) break;
                    if (!owners.contains(candidate)) owners.add(candidate);
                }
            }
        }
        List<Integer> indices = new ArrayList<>();
        for (Node n : owners) indices.add(nodes.indexOf(n));
        return indices;
    }

    private static List<Node> topology(String name, List<Object> ids, int hosts, int racks, Random random) {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < ids.size(); i++) {
            Node n = new Node(ids.get(i), new UUID(random.nextLong(), random.nextLong()), "h" + (i % hosts),
                "r" + (i % racks));
            Object id = n.consistentId();
            String kind = id instanceof UUID ? "uuid" : "string";
            line("node", name, i, kind, id instanceof UUID ? id : units((String) id), n.id(), n.host(), n.rack());
            nodes.add(n);
        }
        return nodes;
    }

    private static void placements(String name, List<Node> nodes, int parts, String[] modes) {
        for (String mode : modes) {
            for (int backups : new int[] {0, 1, 2, 5}) {
                for (int p = 0; p < parts; p++) {
                    line("assign", name, mode, backups, parts, p, join(assign(nodes, p, backups, mode)));
                }
            }
        }
        for (int p = 0; p < parts; p++) {
            line("assign", name, "plain", ALL, parts, p, join(assign(nodes, p, ALL, "plain")));
        }
    }

    private static String join(List<Integer> indices) {
        StringBuilder b = new StringBuilder();
        for (int i : indices) {
            if (b.length() > 0) b.append(',');
            b.append(i);
        }
        return b.toString();
    }

    private static void topologies(Random random) {
        String[] modes = {"plain", "neighbors", "rack"};
        List<Object> str4 = List.of("node-0", "node-1", "node-2", "node-3");
        placements("str4", topology("str4", str4, 2, 2, random), 128, modes);

        List<Object> ties = List.of("Aa", "BB", "Ea", "FB", "AaAa", "BBBB", "AaBB", "BBAa", "n\u0153ud-\u00fc",
            "\u7bc0\u70b9-\ud83d\ude00");
        placements("ties", topology("ties", ties, 3, 2, random), 128, modes);

        List<Object> uuid7 = new ArrayList<>();
        for (int i = 0; i < 7; i++) uuid7.add(new UUID(random.nextLong(), random.nextLong()));
        placements("uuid7", topology("uuid7", uuid7, 3, 2, random), 128, modes);

        List<Object> uuid32 = new ArrayList<>();
        for (int i = 0; i < 32; i++) uuid32.add(new UUID(random.nextLong(), random.nextLong()));
        placements("uuid32", topology("uuid32", uuid32, 8, 4, random), 1000, modes);

        placements("single", topology("single", List.of("solo"), 1, 1, random), 16, modes);
    }
}
