package io.kafkaplacement.broker;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.replica.ClientMetadata;
import org.apache.kafka.common.replica.PartitionView;
import org.apache.kafka.common.replica.RackAwareReplicaSelector;
import org.apache.kafka.common.replica.ReplicaView;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.NullAndEmptySource;
import org.junit.jupiter.params.provider.ValueSource;

class MultiLevelRackAwareReplicaSelectorTest {

    private static final TopicPartition TP = new TopicPartition("t", 0);

    // ------------------------------------------------------------------------------------------ helpers

    private static ReplicaView replica(int id, String rack, long logEndOffset, long sinceCaughtUpMs) {
        return new ReplicaView.DefaultReplicaView(new Node(id, "host-" + id, 9092, rack), logEndOffset,
                sinceCaughtUpMs);
    }

    private static ReplicaView replica(int id, String rack) {
        return replica(id, rack, 100, 0);
    }

    private static ClientMetadata client(String rack) {
        return new ClientMetadata.DefaultClientMetadata(rack, "consumer", InetAddress.getLoopbackAddress(),
                KafkaPrincipal.ANONYMOUS, "PLAINTEXT");
    }

    /** The partition as the broker builds it: the leader plus the followers, the leader among them. */
    private static PartitionView partition(ReplicaView leader, ReplicaView... followers) {
        Set<ReplicaView> all = new LinkedHashSet<>(Arrays.asList(followers));
        all.add(leader);
        return new PartitionView.DefaultPartitionView(all, leader);
    }

    private static MultiLevelRackAwareReplicaSelector selector(Map<String, ?> configs) {
        MultiLevelRackAwareReplicaSelector s = new MultiLevelRackAwareReplicaSelector();
        s.configure(configs);
        return s;
    }

    private static MultiLevelRackAwareReplicaSelector selector() {
        return selector(Map.of());
    }

    private static int pick(MultiLevelRackAwareReplicaSelector s, String clientRack, PartitionView p) {
        Optional<ReplicaView> chosen = s.select(TP, client(clientRack), p);
        assertTrue(chosen.isPresent(), "no replica selected");
        return chosen.get().endpoint().id();
    }

    private static int pick(String clientRack, PartitionView p) {
        return pick(selector(), clientRack, p);
    }

    // The rig's main cluster: broker 1 /dc1/r1, broker 2 /dc1/r2, broker 3 /dc2/r1.
    private static final ReplicaView B1 = replica(1, "/dc1/r1");
    private static final ReplicaView B2 = replica(2, "/dc1/r2");
    private static final ReplicaView B3 = replica(3, "/dc2/r1");

    // ------------------------------------------------------------------------------------------ levels

    @Test
    void racksSplitIntoLevelsAsTheOperatorSplitsThem() {
        assertEquals(List.of("dc1", "r2"), MultiLevelRackAwareReplicaSelector.levels("/dc1/r2", "/"));
        assertEquals(List.of("dc1", "r2"), MultiLevelRackAwareReplicaSelector.levels("dc1/r2", "/"));
        assertEquals(List.of("dc1", "r2"), MultiLevelRackAwareReplicaSelector.levels("//dc1//r2/", "/"));
        assertEquals(List.of("us-east-1a"), MultiLevelRackAwareReplicaSelector.levels("us-east-1a", "/"));
        assertEquals(List.of("eu", "az1", "r7"), MultiLevelRackAwareReplicaSelector.levels("eu::az1::r7", "::"));
        assertEquals(List.of("/dc1/r2"), MultiLevelRackAwareReplicaSelector.levels("/dc1/r2", ""));
        assertEquals(List.of(), MultiLevelRackAwareReplicaSelector.levels("/", "/"));
        assertEquals(List.of(), MultiLevelRackAwareReplicaSelector.levels("", "/"));
        assertEquals(List.of(), MultiLevelRackAwareReplicaSelector.levels(null, "/"));
    }

    @Test
    void theDefaultSeparatorIsASlash() {
        assertEquals("/", selector().separator());
        assertEquals("/", new MultiLevelRackAwareReplicaSelector().separator());
        assertEquals("/", selector(null).separator());
        assertEquals(".", selector(Map.of(MultiLevelRackAwareReplicaSelector.SEPARATOR_CONFIG, ".")).separator());
    }

    // ------------------------------------------------------------------------------------------ choice

    @Test
    void aClientInTheDcOfAFollowerFetchesFromThatFollower() {
        PartitionView p = partition(B3, B1);  // leader in dc2, follower in dc1
        assertEquals(1, pick("/dc1/r9", p));
    }

    @Test
    void aClientInTheLeadersDcFetchesFromTheLeader() {
        assertEquals(3, pick("/dc2/r7", partition(B3, B1)));
    }

    @Test
    void aClientInTheRackOfAFollowerFetchesFromIt() {
        assertEquals(1, pick("/dc1/r1", partition(B3, B1)));
    }

    @Test
    void theSameRackBeatsTheSameDc() {
        assertEquals(2, pick("/dc1/r2", partition(B3, B1, B2)));
        assertEquals(1, pick("/dc1/r1", partition(B3, B1, B2)));
        assertEquals(2, pick("/dc1/r2", partition(B1, B2, B3)));  // even over the leader in the same dc
    }

    @Test
    void deeperLevelsCount() {
        ReplicaView a = replica(1, "/eu/az1/r1");
        ReplicaView b = replica(2, "/eu/az2/r1");
        ReplicaView c = replica(3, "/us/az1/r1");
        assertEquals(2, pick("/eu/az2/r9", partition(c, a, b)));
        assertEquals(1, pick("/eu/az1/r9", partition(c, a, b)));
        assertEquals(3, pick("/us/az9/r9", partition(a, b, c)));
        assertEquals(1, pick("/eu", partition(c, a)));  // a client naming only its dc
    }

    @Test
    void levelsCountOnlyAsAPrefix() {
        // same rack name in another dc is no match: r1 of dc2 is not r1 of dc1
        assertEquals(2, pick("/dc1/r1", partition(replica(2, "/dc2/r2"), replica(3, "/dc3/r1"))));
    }

    @Test
    void theLeaderWinsATieAmongTheClosest() {
        // client in dc1 (rack r9): leader /dc1/r1 and follower /dc1/r2 share one level each
        assertEquals(1, pick("/dc1/r9", partition(B1, B2, B3)));
    }

    @Test
    void amongFollowersTheMostCaughtUpWins() {
        ReplicaView leader = replica(3, "/dc2/r1", 500, 0);
        ReplicaView behind = replica(1, "/dc1/r1", 400, 0);
        ReplicaView ahead = replica(2, "/dc1/r2", 450, 0);
        assertEquals(2, pick("/dc1/r9", partition(leader, behind, ahead)));
        // equal offsets: the one caught up most recently
        ReplicaView stale = replica(1, "/dc1/r1", 450, 900);
        ReplicaView fresh = replica(2, "/dc1/r2", 450, 10);
        assertEquals(2, pick("/dc1/r9", partition(leader, stale, fresh)));
        ReplicaView fresh1 = replica(1, "/dc1/r1", 450, 10);
        ReplicaView stale2 = replica(2, "/dc1/r2", 450, 900);
        assertEquals(1, pick("/dc1/r9", partition(leader, fresh1, stale2)));
        // all equal: Kafka's comparator then prefers the highest broker id
        assertEquals(2, pick("/dc1/r9", partition(leader, replica(1, "/dc1/r1"), replica(2, "/dc1/r2"))));
    }

    @Test
    void otherSeparators() {
        MultiLevelRackAwareReplicaSelector dots = selector(Map.of(MultiLevelRackAwareReplicaSelector.SEPARATOR_CONFIG, "."));
        assertEquals(1, pick(dots, "dc1.r9", partition(replica(3, "dc2.r1"), replica(1, "dc1.r1"))));
        assertEquals(3, pick(dots, "/dc1/r9", partition(replica(3, "/dc2/r1"), replica(1, "/dc1/r1"))));
        MultiLevelRackAwareReplicaSelector whole = selector(Map.of(MultiLevelRackAwareReplicaSelector.SEPARATOR_CONFIG, ""));
        assertEquals(3, pick(whole, "/dc1/r9", partition(B3, B1)));  // one level: only the same rack matches
        assertEquals(1, pick(whole, "/dc1/r1", partition(B3, B1)));
    }

    @Test
    void aLeadingSeparatorIsIgnored() {
        assertEquals(1, pick("dc1/r1", partition(B3, B1)));
        assertEquals(1, pick("/dc1/r1", partition(replica(3, "dc2/r1"), replica(1, "dc1/r1"))));
    }

    @Test
    void flatRacksMatchWhole() {
        PartitionView p = partition(replica(3, "us-east-1c"), replica(1, "us-east-1a"), replica(2, "us-east-1b"));
        assertEquals(1, pick("us-east-1a", p));
        assertEquals(2, pick("us-east-1b", p));
        assertEquals(3, pick("us-east-1d", p));
    }

    // ------------------------------------------------------------------------------------------ fallbacks

    @ParameterizedTest
    @NullAndEmptySource
    @ValueSource(strings = {"/", "//", "not-a-path", "dc9/r1", " "})
    void withoutAMatchingRackTheLeader(String clientRack) {
        assertEquals(3, pick(clientRack, partition(B3, B1, B2)));
    }

    @Test
    void brokersWithoutRacksGiveTheLeader() {
        PartitionView p = partition(replica(3, null), replica(1, null), replica(2, ""));
        assertEquals(3, pick("/dc1/r1", p));
        assertEquals(3, pick(null, p));
        // a rack-less leader with a rack-aware follower: the follower still serves its rack
        assertEquals(1, pick("/dc1/r1", partition(replica(3, null), B1)));
    }

    @Test
    void aReplicaWithoutAnEndpointIsNeverChosen() {
        ReplicaView unknown = new ReplicaView.DefaultReplicaView(Node.noNode(), 1000, 0);
        assertEquals(3, pick("/dc1/r1", partition(B3, unknown)));
    }

    @Test
    void aPartitionWithOnlyItsLeader() {
        assertEquals(3, pick("/dc1/r1", partition(B3)));
        assertEquals(3, pick("/dc2/r1", partition(B3)));
    }

    @Test
    void theLeaderIsAlsoConsideredWhenTheViewOmitsIt() {
        PartitionView p = new PartitionView.DefaultPartitionView(new HashSet<>(List.of(B1)), B3);
        assertEquals(3, pick("/dc2/r5", p));
        assertEquals(1, pick("/dc1/r5", p));
    }

    @Test
    void neverThrows() {
        MultiLevelRackAwareReplicaSelector s = selector();
        PartitionView broken = new PartitionView() {
            @Override
            public Set<ReplicaView> replicas() {
                throw new IllegalStateException("boom");
            }

            @Override
            public ReplicaView leader() {
                return B3;
            }
        };
        assertEquals(Optional.of(B3), assertDoesNotThrow(() -> s.select(TP, client("/dc1/r1"), broken)));
        assertEquals(Optional.of(B3), s.select(TP, client("/dc1/r1"), broken));  // logged once, still the leader

        PartitionView noLeader = new PartitionView() {
            @Override
            public Set<ReplicaView> replicas() {
                return Set.of(B1);
            }

            @Override
            public ReplicaView leader() {
                throw new IllegalStateException("no leader");
            }
        };
        assertEquals(Optional.empty(), assertDoesNotThrow(() -> s.select(TP, client("/dc1/r1"), noLeader)));

        PartitionView nulls = new PartitionView() {
            @Override
            public Set<ReplicaView> replicas() {
                return null;
            }

            @Override
            public ReplicaView leader() {
                return B3;
            }
        };
        assertEquals(Optional.of(B3), s.select(TP, client("/dc1/r1"), nulls));
        assertEquals(Optional.empty(), s.select(TP, client("/dc1/r1"), null));
        assertEquals(Optional.of(B3), s.select(TP, null, partition(B3, B1)));
        assertEquals(Optional.of(B3), s.select(null, client("/dc1/r1"), broken));

        ClientMetadata throwing = new ClientMetadata.DefaultClientMetadata("x", "c",
                InetAddress.getLoopbackAddress(), KafkaPrincipal.ANONYMOUS, "PLAINTEXT") {
            @Override
            public String rackId() {
                throw new UnsupportedOperationException("no rack");
            }
        };
        assertEquals(Optional.of(B3), s.select(TP, throwing, partition(B3, B1)));

        Set<ReplicaView> withNull = new HashSet<>(Arrays.asList(B1, null, B3));
        assertEquals(Optional.of(B1), s.select(TP, client("/dc1/r1"),
                new PartitionView.DefaultPartitionView(withNull, B3)));
    }

    // ------------------------------------------------------------------------------------------ vs Kafka's

    /**
     * With flat racks (no separator in them) every level is the whole rack, so the choice is Kafka's own
     * RackAwareReplicaSelector's, for random partitions and clients.
     */
    @Test
    void withFlatRacksTheChoiceIsKafkasOwn() {
        RackAwareReplicaSelector kafkas = new RackAwareReplicaSelector();
        MultiLevelRackAwareReplicaSelector ours = selector();
        String[] racks = {"a", "b", "c", "", null};
        Random random = new Random(392);
        for (int round = 0; round < 5000; round++) {
            int n = 1 + random.nextInt(5);
            List<ReplicaView> replicas = new ArrayList<>();
            for (int id = 1; id <= n; id++) {
                replicas.add(replica(id, racks[random.nextInt(racks.length)], 90 + random.nextInt(12),
                        random.nextInt(3) * 100L));
            }
            ReplicaView leader = replicas.get(random.nextInt(n));
            PartitionView p = new PartitionView.DefaultPartitionView(new HashSet<>(replicas), leader);
            ClientMetadata c = client(racks[random.nextInt(racks.length)]);
            assertEquals(kafkas.select(TP, c, p), ours.select(TP, c, p), () -> "client " + c + ", " + p);
        }
    }
}
