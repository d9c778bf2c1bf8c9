import java.io.File;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.BroadcastStream;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.KeyedBroadcastProcessFunction;
import org.apache.flink.streaming.api.functions.sink.legacy.SinkFunction;
import org.apache.flink.streaming.api.functions.source.legacy.RichParallelSourceFunction;
import org.apache.flink.streaming.api.functions.source.legacy.SourceFunction;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.util.Collector;
import org.apache.flink.util.MathUtils;

/**
 * Writes the Flink savepoint golden files of typeinfo-flink-compat with Apache Flink 2.3:
 * a small keyed job runs in a local MiniCluster (parallelism 2) until every record is in its
 * state, then stops with a CANONICAL savepoint (no drain: windows and timers stay pending).
 *
 * <p>Usage: FlinkSavepoints OUT_DIR NAME BACKEND COMPRESSION, BACKEND "hashmap" or "rocksdb",
 * COMPRESSION "true" or "false". Writes OUT_DIR/NAME/ (the savepoint, moved out of Flink's
 * savepoint-xxxx directory) and OUT_DIR/NAME.expected (what the states hold for a sample of
 * keys, one line each: uid|state|key|namespace|value, and the operator ids of the uids).
 *
 * <p>The keyed states of "stateful": order (a POJO value), thirds (a list), buckets (a map),
 * sum (reducing), mean (aggregating, a Tuple2 accumulator), a pending event-time timer per
 * key; its broadcast state "rules"; the source's list state "emitted" and union state "seen";
 * the window's contents (a reducing state under TimeWindow namespaces) and its timers.
 *
 * <p>The input: records i in [0, 600): key "k" + (i % 50), value i, event time i * 100 ms,
 * source subtask i % 2 (so each key comes from one subtask, in order). After its records each
 * source subtask emits the watermark 55000 and idles: the windows [0, 10000) ...
 * [40000, 50000) fire, [50000, 60000) stays pending with its timer.
 */
public class FlinkSavepoints {
    static final int N = 600;
    static final int KEYS = 50;
    static final long WATERMARK = 55_000L;
    static final long WINDOW = 10_000L;
    static final long TIMER_BASE = 1_000_000_000L;

    static final AtomicLong processed = new AtomicLong();
    static final AtomicLong rulesSeen = new AtomicLong();
    static final AtomicLong fired = new AtomicLong();
    static final Map<String, String> mirror = new ConcurrentHashMap<>();
    static final Map<String, List<Long>> allValues = new ConcurrentHashMap<>();
    static final ConcurrentSkipListSet<String> broadcastMirror = new ConcurrentSkipListSet<>();

    /** The POJO in the value state. */
    public static class Order {
        public String user;
        public long count;
        public double total;

        public Order() {}

        @Override
        public String toString() {
            return "Order{count=" + count + ", total=" + total + ", user=\"" + user + "\"}";
        }
    }

    /** One record. */
    public static class Event {
        public String key;
        public long value;

        public Event() {}

        public Event(String key, long value) {
            this.key = key;
            this.value = value;
        }
    }

    /** The records of subtask i % 2, then the watermark, then idle; its offset in list state. */
    public static class EventSource extends RichParallelSourceFunction<Event>
            implements CheckpointedFunction {
        private volatile boolean running = true;
        private transient ListState<Long> emitted;
        private transient ListState<String> seen;
        private long count;

        @Override
        public void run(SourceFunction.SourceContext<Event> ctx) throws Exception {
            int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            for (int i = 0; i < N; i++) {
                if (i % 2 != subtask) {
                    continue;
                }
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collectWithTimestamp(new Event("k" + (i % KEYS), i), i * 100L);
                    count++;
                }
            }
            synchronized (ctx.getCheckpointLock()) {
                ctx.emitWatermark(new Watermark(WATERMARK));
            }
            while (running) {
                Thread.sleep(20);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            emitted.update(Collections.singletonList(count));
            int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            seen.update(List.of("subtask-" + subtask, "count-" + count));
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            emitted = context.getOperatorStateStore()
                    .getListState(new ListStateDescriptor<>("emitted", Types.LONG));
            seen = context.getOperatorStateStore()
                    .getUnionListState(new ListStateDescriptor<>("seen", Types.STRING));
        }
    }

    /** Three rules, then the maximal watermark, then idle. */
    public static class RuleSource implements SourceFunction<String> {
        private volatile boolean running = true;

        @Override
        public void run(SourceFunction.SourceContext<String> ctx) throws Exception {
            synchronized (ctx.getCheckpointLock()) {
                for (int r = 0; r < 3; r++) {
                    ctx.collect("r" + r + "=limit-" + (r * 10));
                }
                ctx.emitWatermark(new Watermark(Long.MAX_VALUE));
            }
            while (running) {
                Thread.sleep(20);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /** The mean of the values: a (sum, count) accumulator. */
    public static class Mean implements AggregateFunction<Long, Tuple2<Long, Integer>, Double> {
        @Override
        public Tuple2<Long, Integer> createAccumulator() {
            return Tuple2.of(0L, 0);
        }

        @Override
        public Tuple2<Long, Integer> add(Long value, Tuple2<Long, Integer> acc) {
            return Tuple2.of(acc.f0 + value, acc.f1 + 1);
        }

        @Override
        public Double getResult(Tuple2<Long, Integer> acc) {
            return acc.f1 == 0 ? 0.0 : (double) acc.f0 / acc.f1;
        }

        @Override
        public Tuple2<Long, Integer> merge(Tuple2<Long, Integer> a, Tuple2<Long, Integer> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    static final MapStateDescriptor<String, String> RULES =
            new MapStateDescriptor<>("rules", Types.STRING, Types.STRING);

    /** The keyed states: a POJO value, a list, a map, a reducing sum, a pending timer. */
    public static class Stateful extends KeyedBroadcastProcessFunction<String, Event, String, Event> {
        private transient ValueState<Order> order;
        private transient ListState<Long> thirds;
        private transient MapState<String, Integer> buckets;
        private transient ReducingState<Long> sum;
        private transient AggregatingState<Long, Double> mean;

        @Override
        public void open(org.apache.flink.api.common.functions.OpenContext ctx) {
            order = getRuntimeContext().getState(new ValueStateDescriptor<>("order", Order.class));
            thirds = getRuntimeContext().getListState(new ListStateDescriptor<>("thirds", Types.LONG));
            buckets = getRuntimeContext().getMapState(
                    new MapStateDescriptor<>("buckets", Types.STRING, Types.INT));
            sum = getRuntimeContext().getReducingState(
                    new ReducingStateDescriptor<>("sum", (ReduceFunction<Long>) Long::sum, Types.LONG));
            mean = getRuntimeContext().getAggregatingState(
                    new AggregatingStateDescriptor<>("mean", new Mean(), Types.TUPLE(Types.LONG, Types.INT)));
        }

        @Override
        public void processElement(Event e, ReadOnlyContext ctx, Collector<Event> out) throws Exception {
            Order o = order.value();
            if (o == null) {
                o = new Order();
                o.user = e.key;
            }
            o.count += 1;
            o.total += e.value * 0.5;
            order.update(o);
            if (e.value % 3 == 0) {
                thirds.add(e.value);
            }
            String bucket = "m" + (e.value % 7);
            Integer b = buckets.get(bucket);
            buckets.put(bucket, b == null ? 1 : b + 1);
            sum.add(e.value);
            mean.add(e.value);
            int keyIndex = Integer.parseInt(e.key.substring(1));
            ctx.timerService().registerEventTimeTimer(TIMER_BASE + keyIndex);
            allValues.computeIfAbsent(e.key, k -> new ArrayList<>()).add(e.value);
            record(e.key);
            out.collect(e);
            processed.incrementAndGet();
        }

        private void record(String key) throws Exception {
            mirror.put("stateful|order|" + key, order.value().toString());
            List<String> list = new ArrayList<>();
            for (Long l : thirds.get()) {
                list.add(String.valueOf(l));
            }
            mirror.put("stateful|thirds|" + key, "[" + String.join(", ", list) + "]");
            TreeMap<String, Integer> sorted = new TreeMap<>();
            for (Map.Entry<String, Integer> en : buckets.entries()) {
                sorted.put(en.getKey(), en.getValue());
            }
            List<String> entries = new ArrayList<>();
            sorted.forEach((k, v) -> entries.add("\"" + k + "\": " + v));
            mirror.put("stateful|buckets|" + key, "{" + String.join(", ", entries) + "}");
            mirror.put("stateful|sum|" + key, String.valueOf(sum.get()));
            // The accumulator (sum, count), as the state holds it.
            long total = 0;
            int count = 0;
            for (Long l : allValues.get(key)) {
                total += l;
                count++;
            }
            mirror.put("stateful|mean|" + key, "(" + total + ", " + count + ")");
        }

        @Override
        public void processBroadcastElement(String rule, Context ctx, Collector<Event> out) throws Exception {
            String[] kv = rule.split("=", 2);
            BroadcastState<String, String> state = ctx.getBroadcastState(RULES);
            state.put(kv[0], kv[1]);
            broadcastMirror.add("\"" + kv[0] + "\": \"" + kv[1] + "\"");
            rulesSeen.incrementAndGet();
        }
    }

    /** Counts the fired windows. */
    public static class CountingSink implements SinkFunction<Event> {
        @Override
        public void invoke(Event value, Context context) {
            fired.incrementAndGet();
        }
    }

    public static void main(String[] args) throws Exception {
        File out = new File(args[0]);
        String name = args[1];
        String backend = args[2];
        boolean compression = Boolean.parseBoolean(args[3]);
        File spDir = new File(out, name + ".tmp");

        Configuration conf = SavepointJobs.configuration(out, name, backend, compression);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);
        env.getConfig().setAutoWatermarkInterval(0);

        DataStream<Event> events = env.addSource(new EventSource()).uid("source").name("source");
        BroadcastStream<String> rules =
                env.addSource(new RuleSource()).uid("rules").name("rules").setParallelism(1).broadcast(RULES);
        DataStream<Event> stateful = events.keyBy(e -> e.key)
                .connect(rules)
                .process(new Stateful())
                .uid("stateful").name("stateful");
        stateful.keyBy(e -> e.key)
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(WINDOW)))
                .reduce((a, b) -> new Event(a.key, a.value + b.value))
                .uid("window").name("window")
                .addSink(new CountingSink()).uid("sink").name("sink");

        JobClient client = env.executeAsync("flink-savepoints-" + name);
        long firedExpected = (long) KEYS * (WATERMARK / WINDOW);
        long deadline = System.currentTimeMillis() + 120_000;
        while (processed.get() < N || rulesSeen.get() < 6 || fired.get() < firedExpected) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("job did not process its input: " + processed.get()
                        + " records, " + rulesSeen.get() + " rules, " + fired.get() + " windows");
            }
            Thread.sleep(20);
        }
        String path = client.stopWithSavepoint(false, spDir.toURI().toString(), SavepointFormatType.CANONICAL).get();
        SavepointJobs.moveSavepoint(path, new File(out, name), spDir);
        SavepointJobs.deleteTree(new File(out, name + ".chk"));
        writeExpected(new File(out, name + ".expected"));
        System.exit(0);
    }

    static String operatorId(String uid) {
        // StreamGraphHasherV2: Hashing.murmur3_128(0) of the uid's UTF-8 bytes (putString).
        byte[] hash = org.apache.flink.shaded.guava33.com.google.common.hash.Hashing.murmur3_128(0)
                .newHasher().putString(uid, StandardCharsets.UTF_8).hash().asBytes();
        StringBuilder sb = new StringBuilder();
        for (byte b : hash) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    static void writeExpected(File file) throws Exception {
        try (PrintWriter w = new PrintWriter(file, StandardCharsets.UTF_8)) {
            for (String uid : List.of("source", "rules", "stateful", "window", "sink")) {
                w.println("operator|" + uid + "|" + operatorId(uid));
            }
            for (int k : new int[] {0, 1, 7, 24, 49}) {
                String key = "k" + k;
                for (String state : List.of("order", "thirds", "buckets", "sum", "mean")) {
                    w.println("stateful|" + state + "|" + key + "|VoidNamespace|"
                            + mirror.get("stateful|" + state + "|" + key));
                }
                long windowSum = 0;
                for (int i = 0; i < N; i++) {
                    if (i % KEYS == k && i * 100L >= 50_000L) {
                        windowSum += i;
                    }
                }
                w.println("window|window-contents|" + key + "|TimeWindow{start=50000, end=60000}|Event{key=\""
                        + key + "\", value=" + windowSum + "}");
                w.println("window|_timer_state/event_window-timers|" + key
                        + "|TimeWindow{start=50000, end=60000}|59999");
                w.println("stateful|_timer_state/event_user-timers|" + key + "|VoidNamespace|"
                        + (TIMER_BASE + k));
            }
            w.println("stateful|rules|-|broadcast|{" + String.join(", ", broadcastMirror) + "}");
            w.println("source|emitted|-|list|[300, 300]");
            w.println("source|seen|-|union|[\"count-300\", \"count-300\", \"subtask-0\", \"subtask-1\"]");
        }
    }
}
