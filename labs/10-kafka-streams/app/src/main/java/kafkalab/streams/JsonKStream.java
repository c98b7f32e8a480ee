package kafkalab.streams;

import java.util.Properties;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Course seed 003's Kafka Streams example: the number of rides per pickup location.
 * Reads `rides` (key = PULocationID, value = a Ride as JSON), counts per key and writes
 * every new count to `rides-pulocation-count` (String key, Long value). The count's state
 * store is backed by a changelog topic Kafka Streams creates.
 *
 * <p>Arguments: bootstrap servers (default kafka1:9092), then the state directory
 * (default: Kafka Streams' own, java.io.tmpdir/kafka-streams). Runs until stopped
 * (Ctrl-C / SIGTERM closes it cleanly).
 */
public class JsonKStream {
    public static final String APPLICATION_ID = "kafka_tutorial.kstream.count.plocation.v1";
    public static final String INPUT = "rides";
    public static final String OUTPUT = "rides-pulocation-count";

    private final Properties props = new Properties();

    public JsonKStream(String bootstrap, String stateDir) {
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, APPLICATION_ID);
        // the page reads only new rides ("latest"); here the rides are in the topic
        // before the application starts, so it reads them from the beginning
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
        // Kafka Streams keeps a closed instance in its group until the session times out
        // (it expects the instance back soon); a lab's application is stopped to be reset,
        // so it leaves the group when it closes, as a plain consumer does. Up to 4.0 this
        // internal consumer setting says so; 4.1 removed it (KAFKA-18185) and leaves on
        // close(CloseOptions.leaveGroup(true)) instead (KIP-1092), which 3.9 applies to
        // static members only: both, so the one source builds and leaves on either line.
        props.put(StreamsConfig.consumerPrefix("internal.leave.group.on.close"), true);
        if (stateDir != null) {
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        }
    }

    public Topology createTopology() {
        StreamsBuilder streamsBuilder = new StreamsBuilder();
        var ridesStream =
                streamsBuilder.stream(INPUT, Consumed.with(Serdes.String(), JsonSerde.of(Ride.class)));
        var puLocationCount = ridesStream.groupByKey().count().toStream();
        puLocationCount.to(OUTPUT, Produced.with(Serdes.String(), Serdes.Long()));
        return streamsBuilder.build();
    }

    public void countPLocation() throws InterruptedException {
        var topology = createTopology();
        System.out.println(topology.describe());
        var kStreams = new KafkaStreams(topology, props);
        var closed = new CountDownLatch(1);
        kStreams.setStateListener((now, before) -> System.out.println("state " + before + " -> " + now));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            kStreams.close(new KafkaStreams.CloseOptions().leaveGroup(true).timeout(Duration.ofSeconds(30)));
            closed.countDown();
        }));
        kStreams.start();
        closed.await();
    }

    public static void main(String[] args) throws InterruptedException {
        String bootstrap = args.length > 0 ? args[0] : "kafka1:9092";
        String stateDir = args.length > 1 ? args[1] : null;
        new JsonKStream(bootstrap, stateDir).countPLocation();
    }
}
