// Apache Flink 2.3 implementation of the `windowed_aggregate` command-line contract
// (runtime/src/bin/windowed_aggregate.rs), used as the reference for the golden files in
// runtime/tests/windowed/. Run it through run.sh next to this file, which fetches Flink's jars,
// compiles this class and prints only the program's lines.
//
//   WindowedAggregate --input FILE --window SPEC --out-of-orderness MS --allowed-lateness MS
//       [--parallelism N] [--trigger TSPEC] [--evictor ESPEC] [--mode streaming|batch]
//       (--state X is ignored)
//
//   SPEC   tumbling:SIZE[:OFFSET] | sliding:SIZE:SLIDE | session:GAP | count:N | count:N:SLIDE
//   TSPEC  count:N | purging-count:N | continuous-event:MS
//   ESPEC  count:N | time:MS
//
// Output (stdout, unordered): `window,KEY,START,END,COUNT,SUM` per firing (START/END are `-`
// for the GlobalWindow of count windows) and `late,KEY,TS,AMOUNT` per late record.

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.datastream.WindowedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.evictors.CountEvictor;
import org.apache.flink.streaming.api.windowing.evictors.TimeEvictor;
import org.apache.flink.streaming.api.windowing.triggers.ContinuousEventTimeTrigger;
import org.apache.flink.streaming.api.windowing.triggers.CountTrigger;
import org.apache.flink.streaming.api.windowing.triggers.PurgingTrigger;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.api.windowing.windows.Window;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

import java.io.BufferedReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class WindowedAggregate {

    /** key, timestamp_ms, amount */
    public static class Event extends Tuple3<String, Long, Long> {
        public Event() {}

        public Event(String key, long ts, long amount) {
            super(key, ts, amount);
        }
    }

    /**
     * Punctuated: after every event, maxTimestampSeen - outOfOrderness - 1; nothing periodic.
     * (Non-advancing watermarks are dropped by Flink's TimestampsAndWatermarksOperator anyway.)
     */
    public static class PerEventWatermarks implements WatermarkGenerator<Event> {
        private final long outOfOrderness;
        private boolean seen = false;
        private long maxTs = Long.MIN_VALUE;

        public PerEventWatermarks(long outOfOrderness) {
            this.outOfOrderness = outOfOrderness;
        }

        @Override
        public void onEvent(Event e, long ts, WatermarkOutput out) {
            maxTs = seen ? Math.max(maxTs, ts) : ts;
            seen = true;
            long wm;
            try {
                wm = Math.subtractExact(Math.subtractExact(maxTs, outOfOrderness), 1L);
            } catch (ArithmeticException underflow) {
                return; // below Long.MIN_VALUE: the watermark cannot advance
            }
            out.emitWatermark(new Watermark(wm));
        }

        @Override
        public void onPeriodicEmit(WatermarkOutput out) {}
    }

    /** Count and sum of the amounts. */
    public static class CountAndSum implements AggregateFunction<Event, Tuple2<Long, Long>, Tuple2<Long, Long>> {
        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, 0L);
        }

        @Override
        public Tuple2<Long, Long> add(Event e, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + 1, acc.f1 + e.f2);
        }

        @Override
        public Tuple2<Long, Long> getResult(Tuple2<Long, Long> acc) {
            return acc;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    /** `window,KEY,START,END,COUNT,SUM`; `-` for the bounds of a GlobalWindow. */
    public static class Format<W extends Window>
            extends ProcessWindowFunction<Tuple2<Long, Long>, String, String, W> {
        @Override
        public void process(String key, Context ctx, Iterable<Tuple2<Long, Long>> results, Collector<String> out) {
            W w = ctx.window();
            String bounds = w instanceof TimeWindow
                    ? ((TimeWindow) w).getStart() + "," + ((TimeWindow) w).getEnd()
                    : "-,-";
            for (Tuple2<Long, Long> r : results) {
                out.collect("window," + key + "," + bounds + "," + r.f0 + "," + r.f1);
            }
        }
    }

    public static class ByKey implements KeySelector<Event, String> {
        @Override
        public String getKey(Event e) {
            return e.f0;
        }
    }

    public static class LateLine implements MapFunction<Event, String> {
        @Override
        public String map(Event e) {
            return "late," + e.f0 + "," + e.f1 + "," + e.f2;
        }
    }

    static final OutputTag<Event> LATE = new OutputTag<Event>("late", TypeInformation.of(Event.class)) {};

    static long[] nums(String spec, String[] parts) {
        long[] out = new long[parts.length - 1];
        for (int i = 1; i < parts.length; i++) {
            try {
                out[i - 1] = Long.parseLong(parts[i]);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad spec " + spec);
            }
        }
        return out;
    }

    /** The window's trigger and evictor options, then the aggregate: shared by every window type. */
    static <W extends Window> SingleOutputStreamOperator<String> finish(
            WindowedStream<Event, String, W> ws, long lateness, String trigger, String evictor, int parallelism) {
        ws = ws.allowedLateness(Duration.ofMillis(lateness)).sideOutputLateData(LATE);
        if (trigger != null) {
            String[] p = trigger.split(":");
            long[] n = nums(trigger, p);
            if (p[0].equals("count") && n.length == 1) {
                ws = ws.trigger(CountTrigger.of(n[0]));
            } else if (p[0].equals("purging-count") && n.length == 1) {
                ws = ws.trigger(PurgingTrigger.of(CountTrigger.of(n[0])));
            } else if (p[0].equals("continuous-event") && n.length == 1) {
                ws = ws.trigger(ContinuousEventTimeTrigger.of(Duration.ofMillis(n[0])));
            } else {
                throw new IllegalArgumentException("bad --trigger " + trigger);
            }
        }
        if (evictor != null) {
            String[] p = evictor.split(":");
            long[] n = nums(evictor, p);
            if (p[0].equals("count") && n.length == 1) {
                ws = ws.evictor(CountEvictor.of(n[0]));
            } else if (p[0].equals("time") && n.length == 1) {
                ws = ws.evictor(TimeEvictor.of(Duration.ofMillis(n[0])));
            } else {
                throw new IllegalArgumentException("bad --evictor " + evictor);
            }
        }
        return ws.aggregate(new CountAndSum(), new Format<W>(), TypeInformation.of(new TypeHint<Tuple2<Long, Long>>() {}),
                        TypeInformation.of(new TypeHint<Tuple2<Long, Long>>() {}), TypeInformation.of(String.class))
                .name("Count and sum").setParallelism(parallelism);
    }

    public static void main(String[] args) throws Exception {
        // Only the program's lines go to stdout: anything else that writes to System.out
        // (a logging default, a banner) ends up on stderr.
        PrintStream stdout = System.out;
        System.setOut(System.err);

        Map<String, String> opt = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --flag value, got " + args[i]);
            }
            opt.put(args[i], args[++i]);
        }
        String input = req(opt, "--input");
        String window = req(opt, "--window");
        long ooo = Long.parseLong(req(opt, "--out-of-orderness"));
        long lateness = Long.parseLong(req(opt, "--allowed-lateness"));
        int parallelism = Integer.parseInt(opt.getOrDefault("--parallelism", "1"));
        String trigger = opt.get("--trigger");
        String evictor = opt.get("--evictor");
        String mode = opt.getOrDefault("--mode", "streaming");

        List<Event> events = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(Paths.get(input), StandardCharsets.UTF_8)) {
            String line;
            int lineno = 0;
            while ((line = r.readLine()) != null) {
                lineno++;
                if (line.isEmpty() || line.startsWith("#")) continue;
                String[] f = line.split(",", -1);
                if (f.length != 3) throw new IllegalArgumentException(input + ":" + lineno + ": expected key,timestamp_ms,amount");
                events.add(new Event(f[0], Long.parseLong(f[1].trim()), Long.parseLong(f[2].trim())));
            }
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        if (mode.equals("batch")) {
            env.setRuntimeMode(RuntimeExecutionMode.BATCH);
        } else if (!mode.equals("streaming")) {
            throw new IllegalArgumentException("bad --mode " + mode);
        }
        final long outOfOrderness = ooo;
        DataStream<Event> source = env.fromData(events, TypeInformation.of(Event.class))
                .setParallelism(1)
                .assignTimestampsAndWatermarks(
                        WatermarkStrategy.<Event>forGenerator(ctx -> new PerEventWatermarks(outOfOrderness))
                                .withTimestampAssigner((e, previous) -> e.f1))
                .setParallelism(1);
        KeyedStream<Event, String> keyed = source.keyBy(new ByKey(), TypeInformation.of(String.class));

        String[] w = window.split(":");
        long[] n = nums(window, w);
        SingleOutputStreamOperator<String> windows;
        if (w[0].equals("tumbling") && (n.length == 1 || n.length == 2)) {
            windows = finish(keyed.window(TumblingEventTimeWindows.of(Duration.ofMillis(n[0]),
                    Duration.ofMillis(n.length == 2 ? n[1] : 0))), lateness, trigger, evictor, parallelism);
        } else if (w[0].equals("sliding") && n.length == 2) {
            windows = finish(keyed.window(SlidingEventTimeWindows.of(Duration.ofMillis(n[0]), Duration.ofMillis(n[1]))),
                    lateness, trigger, evictor, parallelism);
        } else if (w[0].equals("session") && n.length == 1) {
            windows = finish(keyed.window(EventTimeSessionWindows.withGap(Duration.ofMillis(n[0]))),
                    lateness, trigger, evictor, parallelism);
        } else if (w[0].equals("count") && n.length == 1) {
            windows = finish(keyed.countWindow(n[0]), lateness, trigger, evictor, parallelism);
        } else if (w[0].equals("count") && n.length == 2) {
            windows = finish(keyed.countWindow(n[0], n[1]), lateness, trigger, evictor, parallelism);
        } else {
            throw new IllegalArgumentException("bad --window " + window);
        }
        DataStream<String> late = windows.getSideOutput(LATE).map(new LateLine()).setParallelism(parallelism);

        List<String> lines = new ArrayList<>();
        try (CloseableIterator<String> it = windows.union(late).executeAndCollect("windowed_aggregate")) {
            while (it.hasNext()) lines.add(it.next());
        }
        StringBuilder sb = new StringBuilder();
        for (String l : lines) sb.append(l).append('\n');
        stdout.print(sb);
        stdout.flush();
    }

    static String req(Map<String, String> opt, String flag) {
        String v = opt.get(flag);
        if (v == null) throw new IllegalArgumentException("missing " + flag);
        return v;
    }
}
