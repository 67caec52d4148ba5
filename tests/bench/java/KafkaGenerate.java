// What `kafka-reassign-partitions.sh --generate` computes, without a running cluster.
//
// Kafka 4.3.1 code path (read with javap from kafka-tools-4.3.1.jar):
//   ReassignPartitionsCommand.generateAssignment(admin, topicsJson, brokerList, enableRackAware)
//     -> getBrokerMetadata(admin, brokerIds, enableRackAware)   : UsableBroker(id, rack or empty, fenced=false)
//                                                                  for the --broker-list brokers; throws if
//                                                                  rack-aware and only some brokers have racks
//     -> calculateAssignment(currentAssignment, usableBrokers)  : per topic,
//          REPLICA_PLACER.place(new PlacementSpec(0, numPartitions, rf), describer of usableBrokers)
//        where REPLICA_PLACER = new StripedReplicaPlacer(new Random()) (org.apache.kafka.metadata.placement,
//        kafka-metadata jar) and rf = size of the topic's first current replica list.
// (The old ZooKeeper-era AdminUtils.assignReplicasToBrokers is gone from 4.x.) Every partition of every
// topic is placed from scratch: the current placement only contributes numPartitions and rf.
//
// Input on stdin, one directive a line (blank lines and '#' comments ignored):
//   seed <long>             optional: use a fresh StripedReplicaPlacer(new Random(seed)), same spec and
//                           describer as calculateAssignment, so runs are reproducible. Without it the
//                           private static calculateAssignment itself is called (reflection), whose static
//                           placer uses an unseeded Random, exactly like the real tool.
//   rackaware <0|1>         optional, default 1 (the tool's default; 0 = --disable-rack-aware)
//   broker <id> <rack|->    one per --broker-list broker ('-' = no rack)
//   topic <name> <numPartitions> <rf>
// Output on stdout: "<topic> <partition> <b1,b2,...>" per partition, topics in input order.
// Errors: a one-line message on stderr and exit status 2.

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.ReplicaPlacer;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;
import org.apache.kafka.tools.reassign.ReassignPartitionsCommand;

public final class KafkaGenerate {
    private KafkaGenerate() {
    }

    private static final class Fail extends Exception {
        Fail(String msg) {
            super(msg);
        }
    }

    public static void main(String[] args) throws Exception {
        try {
            run();
        } catch (Fail e) {
            System.err.println("KafkaGenerate: " + e.getMessage());
            System.exit(2);
        }
    }

    private static void run() throws Exception {
        Long seed = null;
        boolean rackAware = true;
        List<int[]> brokerIds = new ArrayList<>();
        List<String> brokerRacks = new ArrayList<>();
        LinkedHashMap<String, int[]> topics = new LinkedHashMap<>(); // name -> {numPartitions, rf}

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        int lineNo = 0;
        while ((line = in.readLine()) != null) {
            lineNo++;
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\\s+");
            try {
                switch (f[0]) {
                    case "seed":
                        need(f, 2, lineNo);
                        seed = Long.parseLong(f[1]);
                        break;
                    case "rackaware":
                        need(f, 2, lineNo);
                        rackAware = !f[1].equals("0") && !f[1].equalsIgnoreCase("false");
                        break;
                    case "broker":
                        need(f, 3, lineNo);
                        brokerIds.add(new int[] {Integer.parseInt(f[1])});
                        brokerRacks.add(f[2].equals("-") ? null : f[2]);
                        break;
                    case "topic":
                        need(f, 4, lineNo);
                        if (topics.put(f[1], new int[] {Integer.parseInt(f[2]), Integer.parseInt(f[3])}) != null) {
                            throw new Fail("line " + lineNo + ": topic " + f[1] + " given twice");
                        }
                        break;
                    default:
                        throw new Fail("line " + lineNo + ": unknown directive '" + f[0] + "'");
                }
            } catch (NumberFormatException e) {
                throw new Fail("line " + lineNo + ": bad number in '" + line + "'");
            }
        }
        if (brokerIds.isEmpty()) {
            throw new Fail("no brokers given");
        }

        // getBrokerMetadata(admin, brokerList, enableRackAware)
        List<UsableBroker> usable = new ArrayList<>();
        long withRack = 0;
        for (int i = 0; i < brokerIds.size(); i++) {
            String rack = brokerRacks.get(i);
            boolean hasRack = rackAware && rack != null;
            usable.add(new UsableBroker(brokerIds.get(i)[0], hasRack ? Optional.of(rack) : Optional.empty(), false));
            if (hasRack) {
                withRack++;
            }
        }
        if (rackAware && withRack != 0 && withRack != usable.size()) {
            throw new Fail("Not all brokers have rack information. Add --disable-rack-aware in command line "
                + "to make replica assignment without rack information.");
        }

        // The "current assignment" generateAssignment hands to calculateAssignment: only the number of
        // partitions per topic and the size of each replica list matter.
        Map<TopicPartition, List<Integer>> current = new LinkedHashMap<>();
        for (Map.Entry<String, int[]> t : topics.entrySet()) {
            List<Integer> dummy = Collections.nCopies(t.getValue()[1], -1);
            for (int p = 0; p < t.getValue()[0]; p++) {
                current.put(new TopicPartition(t.getKey(), p), dummy);
            }
        }

        Map<TopicPartition, List<Integer>> proposed;
        try {
            proposed = seed == null ? viaKafka(current, usable) : seeded(current, usable, seed);
        } catch (RuntimeException e) {
            throw new Fail(e.getClass().getSimpleName() + ": " + e.getMessage());
        }

        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, int[]> t : topics.entrySet()) {
            for (int p = 0; p < t.getValue()[0]; p++) {
                List<Integer> reps = proposed.get(new TopicPartition(t.getKey(), p));
                if (reps == null) {
                    throw new Fail("no assignment computed for " + t.getKey() + "-" + p);
                }
                sb.setLength(0);
                sb.append(t.getKey()).append(' ').append(p).append(' ');
                for (int i = 0; i < reps.size(); i++) {
                    if (i > 0) {
                        sb.append(',');
                    }
                    sb.append(reps.get(i));
                }
                sb.append('\n');
                out.write(sb.toString());
            }
        }
        out.flush();
    }

    private static void need(String[] f, int n, int lineNo) throws Fail {
        if (f.length != n) {
            throw new Fail("line " + lineNo + ": expected " + n + " fields, got " + f.length);
        }
    }

    /** ReassignPartitionsCommand.calculateAssignment itself (private static: called reflectively). */
    @SuppressWarnings("unchecked")
    private static Map<TopicPartition, List<Integer>> viaKafka(
            Map<TopicPartition, List<Integer>> current, List<UsableBroker> usable) throws Exception {
        Method m = ReassignPartitionsCommand.class.getDeclaredMethod("calculateAssignment", Map.class, List.class);
        m.setAccessible(true);
        try {
            return (Map<TopicPartition, List<Integer>>) m.invoke(null, current, usable);
        } catch (InvocationTargetException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException) {
                throw (RuntimeException) c;
            }
            throw e;
        }
    }

    /** calculateAssignment's body, with a seeded placer instead of its static unseeded one. */
    private static Map<TopicPartition, List<Integer>> seeded(
            Map<TopicPartition, List<Integer>> current, List<UsableBroker> usable, long seed) {
        ReplicaPlacer placer = new StripedReplicaPlacer(new Random(seed));
        ClusterDescriber describer = new ClusterDescriber() {
            @Override
            public Iterator<UsableBroker> usableBrokers() {
                return usable.iterator();
            }

            @Override
            public Uuid defaultDir(int brokerId) {
                return DirectoryId.MIGRATING;
            }
        };
        // Same grouping (a HashMap keyed by topic) so topics draw from the Random in the same order.
        Map<String, List<Map.Entry<TopicPartition, List<Integer>>>> byTopic = new HashMap<>();
        for (Map.Entry<TopicPartition, List<Integer>> e : current.entrySet()) {
            byTopic.computeIfAbsent(e.getKey().topic(), k -> new ArrayList<>()).add(e);
        }
        Map<TopicPartition, List<Integer>> proposed = new HashMap<>();
        byTopic.forEach((topic, parts) -> {
            int rf = parts.get(0).getValue().size();
            TopicAssignment a = placer.place(new PlacementSpec(0, parts.size(), (short) rf), describer);
            for (int i = 0; i < a.assignments().size(); i++) {
                proposed.put(new TopicPartition(topic, i), a.assignments().get(i).replicas());
            }
        });
        return proposed;
    }
}
