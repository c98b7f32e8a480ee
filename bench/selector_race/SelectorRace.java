// Two channels of one broker to the controller (alter-partition, forwarding) rebuild their
// network client at the same moment, as a broker in migration mode does when the KRaft
// controller takes over; then one of them rebuilds again, as on the way back to ZooKeeper.
// Kafka's Selector names its sensors by the metric tags alone ({BrokerId=3} for both), so the
// two share sensors; a metric registered on a sensor the other thread has just removed is
// left behind, and the second rebuild fails on it ("A metric named ... already exists").
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.network.PlaintextChannelBuilder;
import org.apache.kafka.common.network.Selector;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;

public class SelectorRace {
    static Selector build(Metrics metrics, String channel) {
        PlaintextChannelBuilder builder = new PlaintextChannelBuilder(null);
        builder.configure(new HashMap<>());
        return new Selector(-1, -1, metrics, Time.SYSTEM, channel, Map.of("BrokerId", "3"),
            false, builder, new LogContext());
    }

    // A failure of the concurrent rebuild itself is counted too (the race can hit it).
    static final AtomicInteger concurrentFailed = new AtomicInteger();

    static Thread rebuild(CyclicBarrier go, Selector[] held, Metrics metrics, String channel) {
        return new Thread(() -> {
            try {
                go.await();
                held[0].close();
                held[0] = build(metrics, channel);
            } catch (Exception e) {
                concurrentFailed.incrementAndGet();
                held[0] = null;
            }
        });
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        int failed = 0;
        String first = null;
        for (int i = 0; i < rounds; i++) {
            Metrics metrics = new Metrics();
            Selector[] alter = {build(metrics, "alter-partition")};
            Selector[] forward = {build(metrics, "forwarding")};
            CyclicBarrier go = new CyclicBarrier(2);
            Thread a = rebuild(go, alter, metrics, "alter-partition");
            Thread f = rebuild(go, forward, metrics, "forwarding");
            a.start();
            f.start();
            a.join();
            f.join();
            if (alter[0] != null) {
                try {
                    alter[0].close();
                    alter[0] = build(metrics, "alter-partition");
                } catch (IllegalArgumentException e) {
                    failed++;
                    if (first == null) first = e.getMessage();
                    alter[0] = null;
                }
            }
            for (Selector s : new Selector[] {alter[0], forward[0]}) {
                if (s != null) s.close();
            }
            metrics.close();
        }
        System.out.println(failed + " " + rounds + " " + concurrentFailed.get());
        if (first != null) System.out.println(first);
    }
}
