import java.io.File;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
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
import org.apache.flink.streaming.api.functions.source.legacy.SourceFunction;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.util.Collector;

/**
 * Writes the golden files of typeinfo-flink-compat's "migrate a Flink job's state to Rust" test
 * with Apache Flink 2.3: a small job runs in a local MiniCluster (default parallelism 2, default
 * max parallelism 128) either to its end ("full": the reference output), or over the first half
 * of its input, then stops with a CANONICAL savepoint (no drain: windows and timers stay
 * pending) that a Rust job restores to produce the rest of the output ("half").
 *
 * <p>Usage: FlinkMigration OUT_DIR MODE BACKEND, MODE "full" or "half", BACKEND "hashmap" or
 * "rocksdb". "full" writes OUT_DIR/full.output; "half" writes OUT_DIR/half_BACKEND/ (the
 * savepoint, moved out of Flink's savepoint-xxxx directory) and OUT_DIR/half_BACKEND.output.
 * A .output file holds every line the sink received, sorted, one per line.
 *
 * <p>The job: "rules" (parallelism 1) emits r0=alpha, r1=beta, r2=gamma, broadcast (state
 * "rules") to "stateful"; "events" (parallelism 1) waits until both "stateful" subtasks hold the
 * three rules, then emits record i in [0, N) ("full") or [0, HALF) ("half"): key "k" + (i % 40),
 * value i, event time i * 100 ms, no watermark per record. "tagger" (parallelism 1) numbers the
 * records (seq, its count in the operator list state "seen"). "stateful" (keyed by key, with the
 * broadcast rules) keeps order (a POJO value), thirds (a list), buckets (a map), sum (reducing)
 * and one event-time timer per key at TIMER_BASE + key index, and emits an "element" line per
 * record and a "timer" line per fired timer. "window" sums the tagged records of a key over
 * tumbling 10 s event-time windows, "window-lines" formats them. "sink" (parallelism 1) collects
 * the union of the element, timer and window lines.
 *
 * <p>"full": both sources end, so the maximal watermark fires every window and timer. "half":
 * after its records "events" emits the watermark STOP_WATERMARK and idles ("rules" idles too):
 * the windows [0, 10000) ... [30000, 40000) fire (40 keys each), [40000, 50000) and
 * [50000, 60000) stay pending, every user timer stays pending.
 */
public class FlinkMigration {
    static final int N = 1200;
    static final int HALF = 550;
    static final int KEYS = 40;
    static final long WINDOW = 10_000L;
    static final long TIMER_BASE = 1_000_000_000L;
    static final long STOP_WATERMARK = 45_000L;

    // MiniCluster runs the job in this JVM: the functions and main share these.
    static final AtomicLong processed = new AtomicLong();
    static final AtomicLong rulesSeen = new AtomicLong();
    static final AtomicLong sunk = new AtomicLong();
    static final ConcurrentLinkedQueue<String> lines = new ConcurrentLinkedQueue<>();

    /** One record. */
    public static class Event {
        public String key;
        public long value;
        public long seq;

        public Event() {}

        public Event(String key, long value, long seq) {
            this.key = key;
            this.value = value;
            this.seq = seq;
        }
    }

    /** The POJO in the value state. */
    public static class Order {
        public String user;
        public long count;
        public double total;

        public Order() {}
    }

    /** The three rules; then the end ("full") or idle ("half"). */
    public static class RuleSource implements SourceFunction<String> {
        private final boolean full;
        private volatile boolean running = true;

        RuleSource(boolean full) {
            this.full = full;
        }

        @Override
        public void run(SourceFunction.SourceContext<String> ctx) throws Exception {
            synchronized (ctx.getCheckpointLock()) {
                ctx.collect("r0=alpha");
                ctx.collect("r1=beta");
                ctx.collect("r2=gamma");
            }
            if (full) {
                return;
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

    /** Once the rules are in, the records; then the end ("full") or a watermark and idle ("half"). */
    public static class EventSource implements SourceFunction<Event> {
        private final boolean full;
        private volatile boolean running = true;

        EventSource(boolean full) {
            this.full = full;
        }

        @Override
        public void run(SourceFunction.SourceContext<Event> ctx) throws Exception {
            while (rulesSeen.get() < 6) {
                Thread.sleep(10);
            }
            int limit = full ? N : HALF;
            for (int i = 0; i < limit; i++) {
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collectWithTimestamp(new Event("k" + (i % KEYS), i, 0), i * 100L);
                }
            }
            if (full) {
                return;
            }
            synchronized (ctx.getCheckpointLock()) {
                ctx.emitWatermark(new Watermark(STOP_WATERMARK));
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

    /** Numbers the records from 0 (seq); the count is in the operator list state "seen". */
    public static class Tagger extends RichMapFunction<Event, Event> implements CheckpointedFunction {
        private transient ListState<Long> seen;
        private long count;

        @Override
        public Event map(Event e) {
            Event tagged = new Event(e.key, e.value, count);
            count += 1;
            return tagged;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            seen.update(Collections.singletonList(count));
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            seen = context.getOperatorStateStore()
                    .getListState(new ListStateDescriptor<>("seen", Types.LONG));
            count = 0;
            Iterable<Long> restored = seen.get();
            if (restored != null) {
                for (Long l : restored) {
                    count += l;
                }
            }
        }
    }

    static final MapStateDescriptor<String, String> RULES =
            new MapStateDescriptor<>("rules", Types.STRING, Types.STRING);

    /** The keyed states: a POJO value, a list, a map, a reducing sum, a timer per key. */
    public static class Stateful extends KeyedBroadcastProcessFunction<String, Event, String, String> {
        private transient ValueState<Order> order;
        private transient ListState<Long> thirds;
        private transient MapState<String, Integer> buckets;
        private transient ReducingState<Long> sum;

        @Override
        public void open(OpenContext ctx) {
            order = getRuntimeContext().getState(new ValueStateDescriptor<>("order", Order.class));
            thirds = getRuntimeContext().getListState(new ListStateDescriptor<>("thirds", Types.LONG));
            buckets = getRuntimeContext().getMapState(
                    new MapStateDescriptor<>("buckets", Types.STRING, Types.INT));
            sum = getRuntimeContext().getReducingState(
                    new ReducingStateDescriptor<>("sum", (ReduceFunction<Long>) Long::sum, Types.LONG));
        }

        private long thirdsCount() throws Exception {
            long n = 0;
            Iterable<Long> all = thirds.get();
            if (all != null) {
                for (Long ignored : all) {
                    n++;
                }
            }
            return n;
        }

        private long bucketCount() throws Exception {
            long n = 0;
            Iterable<String> keys = buckets.keys();
            if (keys != null) {
                for (String ignored : keys) {
                    n++;
                }
            }
            return n;
        }

        @Override
        public void processElement(Event e, ReadOnlyContext ctx, Collector<String> out) throws Exception {
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
            int bc = b == null ? 1 : b + 1;
            buckets.put(bucket, bc);
            sum.add(e.value);
            String rule = ctx.getBroadcastState(RULES).get("r" + (e.value % 3));
            ctx.timerService().registerEventTimeTimer(TIMER_BASE + Integer.parseInt(e.key.substring(1)));
            out.collect(String.format(Locale.ROOT,
                    "element %s %d seq=%d count=%d total=%.1f thirds=%d %s=%d sum=%d rule=%s",
                    e.key, e.value, e.seq, o.count, o.total, thirdsCount(), bucket, bc, sum.get(), rule));
            processed.incrementAndGet();
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<String> out) throws Exception {
            out.collect(String.format(Locale.ROOT, "timer %s %d count=%d sum=%d thirds=%d buckets=%d",
                    ctx.getCurrentKey(), ts, order.value().count, sum.get(), thirdsCount(), bucketCount()));
        }

        @Override
        public void processBroadcastElement(String rule, Context ctx, Collector<String> out) throws Exception {
            String[] kv = rule.split("=", 2);
            ctx.getBroadcastState(RULES).put(kv[0], kv[1]);
            rulesSeen.incrementAndGet();
        }
    }

    /** Keeps every line. */
    public static class LineSink implements SinkFunction<String> {
        @Override
        public void invoke(String value, Context context) {
            lines.add(value);
            sunk.incrementAndGet();
        }
    }

    public static void main(String[] args) throws Exception {
        File out = new File(args[0]);
        String mode = args[1];
        String backend = args[2];
        if (!mode.equals("full") && !mode.equals("half")) {
            throw new IllegalArgumentException("MODE must be full or half: " + mode);
        }
        boolean full = mode.equals("full");
        String name = full ? "full" : "half_" + backend;
        for (Class<?> c : List.of(Event.class, Order.class)) {
            if (!(TypeInformation.of(c) instanceof PojoTypeInfo)) {
                throw new IllegalStateException(c + " is not a Flink POJO");
            }
        }

        Configuration conf = SavepointJobs.configuration(out, name, backend, false);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);
        env.getConfig().setAutoWatermarkInterval(0);

        BroadcastStream<String> rules = env.addSource(new RuleSource(full))
                .uid("rules").name("rules").setParallelism(1)
                .broadcast(RULES);
        DataStream<Event> events = env.addSource(new EventSource(full))
                .uid("events").name("events").setParallelism(1);
        DataStream<Event> tagged = events.map(new Tagger())
                .uid("tagger").name("tagger").setParallelism(1);
        DataStream<String> stateful = tagged.keyBy(e -> e.key)
                .connect(rules)
                .process(new Stateful())
                .uid("stateful").name("stateful").setParallelism(2);
        DataStream<String> windowLines = tagged.keyBy(e -> e.key)
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(WINDOW)))
                .reduce((a, b) -> new Event(a.key, a.value + b.value, Math.max(a.seq, b.seq)))
                .uid("window").name("window").setParallelism(2)
                .map(e -> String.format(Locale.ROOT, "window %s %d seq=%d", e.key, e.value, e.seq))
                .uid("window-lines").name("window-lines").setParallelism(2);
        stateful.union(windowLines)
                .addSink(new LineSink()).uid("sink").name("sink").setParallelism(1);

        if (full) {
            env.execute("flink-migration-" + name);
            if (processed.get() != N) {
                throw new IllegalStateException("job processed " + processed.get() + " records, not " + N);
            }
        } else {
            JobClient client = env.executeAsync("flink-migration-" + name);
            // The element lines, plus the fired windows [0, 10000) ... [30000, 40000): each
            // holds 100 consecutive records, so every one of the KEYS keys.
            long expected = HALF + KEYS * (STOP_WATERMARK / WINDOW);
            long deadline = System.currentTimeMillis() + 120_000;
            while (processed.get() < HALF || sunk.get() < expected) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("job did not process its input in 120 s: "
                            + processed.get() + " records (want " + HALF + "), " + rulesSeen.get()
                            + " rules, " + sunk.get() + " lines at the sink (want " + expected + ")");
                }
                Thread.sleep(20);
            }
            File spDir = new File(out, name + ".tmp");
            String path = client.stopWithSavepoint(false, spDir.toURI().toString(), SavepointFormatType.CANONICAL).get();
            if (processed.get() != HALF || sunk.get() != expected) {
                throw new IllegalStateException("job went past its input: " + processed.get()
                        + " records (want " + HALF + "), " + sunk.get() + " lines at the sink (want "
                        + expected + ")");
            }
            SavepointJobs.moveSavepoint(path, new File(out, name), spDir);
        }
        SavepointJobs.deleteTree(new File(out, name + ".chk"));
        writeLines(new File(out, name + ".output"));
        System.exit(0);
    }

    static void writeLines(File file) throws Exception {
        List<String> sorted = new ArrayList<>(lines);
        Collections.sort(sorted);
        try (PrintWriter w = new PrintWriter(file, StandardCharsets.UTF_8)) {
            for (String line : sorted) {
                w.print(line);
                w.print('\n');
            }
        }
    }
}
