package io.kafkaplacement.broker;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.replica.ClientMetadata;
import org.apache.kafka.common.replica.PartitionView;
import org.apache.kafka.common.replica.ReplicaSelector;
import org.apache.kafka.common.replica.ReplicaView;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A replica selector for follower fetching (KIP-392) that understands multi-level racks such as
 * {@code /dc1/r2}: a consumer with {@code client.rack=/dc1/r9} fetches from a replica in its own rack if
 * there is one, else from one in its data centre ({@code dc1}), and so on up the levels; with no level in
 * common, or without a {@code client.rack}, from the leader.
 *
 * <p>Set on the brokers with {@code replica.selector.class=io.kafkaplacement.broker.MultiLevelRackAwareReplicaSelector}.
 * It only decides where consumers fetch from: the brokers' own replication is never asked.
 *
 * <p>A rack splits into levels on a separator (default {@code /}, broker setting
 * {@value #SEPARATOR_CONFIG}); empty parts are dropped, so a leading separator is ignored and
 * {@code dc1/r2} equals {@code /dc1/r2}; an empty separator makes the whole rack one level. This is the
 * rule of the operator's {@code rackAwareness.separator}. Racks without any separator are one level, so
 * with flat racks this selector chooses what Kafka's {@code RackAwareReplicaSelector} chooses.
 *
 * <p>The candidates are the replicas the leader offers (Kafka passes the leader and the in-sync followers
 * that hold the fetch offset). Among those whose rack shares the most leading levels with the client's,
 * the leader wins if it is one of them, else the most caught-up ({@link ReplicaView#comparator()}: highest
 * log end offset, then the most recently caught up, then the highest broker id), as Kafka's selector
 * breaks ties.
 *
 * <p>It never throws: the broker calls it while serving a fetch, where an exception would fail the fetch.
 * Any unexpected input gives the leader (or, without one, no preference, which Kafka serves from the
 * leader).
 */
public class MultiLevelRackAwareReplicaSelector implements ReplicaSelector {

    /** Broker setting: the separator between the levels of a rack (default {@value #DEFAULT_SEPARATOR}). */
    public static final String SEPARATOR_CONFIG = "kafkaplacement.rack.separator";
    public static final String DEFAULT_SEPARATOR = "/";

    private static final Logger LOG = LoggerFactory.getLogger(MultiLevelRackAwareReplicaSelector.class);

    private volatile String separator = DEFAULT_SEPARATOR;
    private final AtomicBoolean warned = new AtomicBoolean();

    @Override
    public void configure(Map<String, ?> configs) {
        Object value = configs == null ? null : configs.get(SEPARATOR_CONFIG);
        separator = value == null ? DEFAULT_SEPARATOR : value.toString();
        LOG.info("{}: rack levels separated by '{}'", getClass().getSimpleName(), separator);
    }

    /** The separator in use. */
    public String separator() {
        return separator;
    }

    @Override
    public Optional<ReplicaView> select(TopicPartition topicPartition, ClientMetadata clientMetadata,
                                        PartitionView partitionView) {
        ReplicaView leader = null;
        try {
            if (partitionView == null) {
                return Optional.empty();
            }
            leader = partitionView.leader();
            return Optional.ofNullable(choose(clientMetadata, partitionView, leader));
        } catch (RuntimeException | LinkageError e) {
            if (warned.compareAndSet(false, true)) {
                LOG.warn("{}: selecting a replica of {} failed; fetching from the leader (logged once)",
                        getClass().getSimpleName(), topicPartition, e);
            } else {
                LOG.debug("selecting a replica of {} failed; fetching from the leader", topicPartition, e);
            }
            return Optional.ofNullable(leader);
        }
    }

    private ReplicaView choose(ClientMetadata client, PartitionView partition, ReplicaView leader) {
        List<String> clientLevels = levels(client == null ? null : client.rackId(), separator);
        if (clientLevels.isEmpty()) {
            return leader;
        }
        List<ReplicaView> candidates = new ArrayList<>();
        Set<ReplicaView> replicas = partition.replicas();
        if (replicas != null) {
            candidates.addAll(replicas);
        }
        if (leader != null && !candidates.contains(leader)) {
            candidates.add(leader);
        }
        int best = 0;
        List<ReplicaView> closest = new ArrayList<>();
        for (ReplicaView replica : candidates) {
            Node endpoint = replica == null ? null : replica.endpoint();
            if (endpoint == null || endpoint.isEmpty()) {
                continue;  // a replica the broker has no endpoint for cannot be fetched from
            }
            int shared = sharedLevels(clientLevels, levels(endpoint.rack(), separator));
            if (shared == 0 || shared < best) {
                continue;
            }
            if (shared > best) {
                best = shared;
                closest.clear();
            }
            closest.add(replica);
        }
        if (closest.isEmpty()) {
            return leader;
        }
        if (leader != null) {
            for (ReplicaView replica : closest) {
                if (replica.equals(leader) || isLeaderNode(replica, leader)) {
                    return leader;
                }
            }
        }
        return Collections.max(closest, ReplicaView.comparator());
    }

    private static boolean isLeaderNode(ReplicaView replica, ReplicaView leader) {
        Node node = leader.endpoint();
        return node != null && !node.isEmpty() && node.id() == replica.endpoint().id();
    }

    /**
     * The levels of a rack: its parts between separators, empty parts dropped ({@code /dc1/r2} and
     * {@code dc1/r2} are [dc1, r2]); an empty separator keeps the whole rack as one level; no rack has none.
     */
    static List<String> levels(String rack, String separator) {
        if (rack == null || rack.isEmpty()) {
            return List.of();
        }
        if (separator == null || separator.isEmpty()) {
            return List.of(rack);
        }
        List<String> out = new ArrayList<>();
        int from = 0;
        while (from <= rack.length()) {
            int at = rack.indexOf(separator, from);
            int end = at < 0 ? rack.length() : at;
            if (end > from) {
                out.add(rack.substring(from, end));
            }
            if (at < 0) {
                break;
            }
            from = at + separator.length();
        }
        return out;
    }

    /** How many leading levels two racks have in common. */
    static int sharedLevels(List<String> a, List<String> b) {
        int n = Math.min(a.size(), b.size());
        int i = 0;
        while (i < n && a.get(i).equals(b.get(i))) {
            i++;
        }
        return i;
    }
}
