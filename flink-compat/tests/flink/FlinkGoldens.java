// Writes the golden files of typeinfo-flink-compat with Apache Flink 2.3's own serializers:
// each file <name>.bin holds the listed sample values, serialized one after the other by
// TypeSerializer.serialize into a DataOutputSerializer. The Rust tests
// (flink-compat/tests/flink_goldens.rs) read every file, check the decoded values and write
// them back byte for byte. Run through flink-compat/tests/flink/run.sh OUT_DIR.
import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshotSerializationUtil;
import org.apache.flink.api.common.typeutils.base.*;
import org.apache.flink.api.common.typeutils.base.array.*;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.api.java.typeutils.runtime.NullableSerializer;
import org.apache.flink.api.java.typeutils.runtime.RowSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

public class FlinkGoldens {
    /** The design documents' example: Order { userId = "u1", amount = 12.5 } is 14 bytes. */
    public static class Order {
        public String userId;
        public double amount;

        public Order() {}

        public Order(String userId, double amount) {
            this.userId = userId;
            this.amount = amount;
        }
    }

    /** A subclass that is not registered: Flink writes its class name (IS_SUBCLASS). */
    public static class PriorityOrder extends Order {
        public int priority;

        public PriorityOrder() {}
    }

    public enum Side { BUY, SELL, HOLD }

    /**
     * A POJO with a field of every kind type extraction gives a POJO field. (Not LocalDate and
     * the other java.time types but Instant: type extraction gives them Kryo.)
     */
    public static class Event {
        public String userId;
        public long ts;
        public Integer count;
        public List<String> tags;
        public Map<String, Long> attrs;
        public Side side;
        public Instant at;
        public BigDecimal price;
        public java.util.Date created;
        public java.sql.Timestamp seen;
        public byte[] payload;
        public int[] scores;
        public Order order;
        public boolean flag;
        public char initial;

        public Event() {}
    }

    static final SerializerConfigImpl CONFIG = new SerializerConfigImpl();
    static Path out;

    @SafeVarargs
    static <T> void write(String name, TypeSerializer<T> serializer, T... values) throws IOException {
        DataOutputSerializer o = new DataOutputSerializer(64);
        for (T v : values) {
            serializer.serialize(v, o);
        }
        Files.write(out.resolve(name + ".bin"), o.getCopyOfBuffer());
    }

    static <T> TypeSerializer<T> of(Class<T> c) {
        return TypeInformation.of(c).createSerializer(CONFIG);
    }

    static <T> TypeSerializer<T> of(TypeHint<T> h) {
        return TypeInformation.of(h).createSerializer(CONFIG);
    }

    public static void main(String[] args) throws Exception {
        out = Paths.get(args[0]);
        Files.createDirectories(out);
        primitives();
        strings();
        arrays();
        collections();
        composites();
        times();
        numbers();
        pojos();
        snapshots();
    }

    /** A serializer's snapshot as Flink writes it into a savepoint's metadata. */
    static void snapshot(String name, TypeSerializer<?> serializer) throws IOException {
        DataOutputSerializer o = new DataOutputSerializer(64);
        TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot(o, serializer.snapshotConfiguration());
        Files.write(out.resolve("snapshot_" + name + ".bin"), o.getCopyOfBuffer());
    }

    static void snapshots() throws IOException {
        snapshot("int", IntSerializer.INSTANCE);
        snapshot("string", StringSerializer.INSTANCE);
        snapshot("instant", InstantSerializer.INSTANCE);
        snapshot("big_decimal", BigDecSerializer.INSTANCE);
        snapshot("int_array", IntPrimitiveArraySerializer.INSTANCE);
        snapshot("local_date", LocalDateSerializer.INSTANCE);
        snapshot("list_string", new ListSerializer<>(StringSerializer.INSTANCE));
        snapshot("map_string_int", new MapSerializer<>(StringSerializer.INSTANCE, IntSerializer.INSTANCE));
        snapshot("integer_array", new GenericArraySerializer<>(Integer.class, IntSerializer.INSTANCE));
        snapshot("nullable_long_padded", NullableSerializer.wrap(LongSerializer.INSTANCE, true));
        snapshot("enum", new EnumSerializer<>(Side.class));
        snapshot("tuple2", of(new TypeHint<Tuple2<String, Integer>>() {}));
        snapshot("row", new RowSerializer(new TypeSerializer<?>[] {StringSerializer.INSTANCE, IntSerializer.INSTANCE}));
        snapshot("pojo_order", of(Order.class));
        snapshot("pojo_event", of(Event.class));
        // A generic type: Flink's Kryo serializer.
        snapshot("kryo_local_date", of(LocalDate.class));
    }

    static void primitives() throws IOException {
        write("boolean", BooleanSerializer.INSTANCE, true, false);
        write("byte", ByteSerializer.INSTANCE, (byte) 0, (byte) 127, (byte) -128, (byte) -1);
        write("short", ShortSerializer.INSTANCE, (short) 0, (short) -2, Short.MAX_VALUE, Short.MIN_VALUE);
        write("char", CharSerializer.INSTANCE, 'a', '\u00e9', '\u4e2d', '\uffff', '\u0000');
        write("int", IntSerializer.INSTANCE, 0, 1, -1, Integer.MIN_VALUE, Integer.MAX_VALUE, 0x12345678);
        write("long", LongSerializer.INSTANCE, 0L, -1L, Long.MIN_VALUE, Long.MAX_VALUE, 1234567890123L);
        write("float", FloatSerializer.INSTANCE, 0f, -1.5f, Float.NaN, Float.POSITIVE_INFINITY, Float.MIN_VALUE);
        write("double", DoubleSerializer.INSTANCE, 0d, 12.5d, Double.NaN, Double.NEGATIVE_INFINITY, -0d);
        // Boxed forms behind Flink's NullableSerializer (null marker; padded: fixed length).
        write("nullable_int", NullableSerializer.wrap(IntSerializer.INSTANCE, false), 7, null, -7);
        write("nullable_long_padded", NullableSerializer.wrap(LongSerializer.INSTANCE, true), 7L, null);
    }

    static void strings() throws IOException {
        StringBuilder longer = new StringBuilder();
        for (int i = 0; i < 300; i++) {
            longer.append((char) ('a' + i % 26));
        }
        // "\ud83d\ude00" is U+1F600 as two UTF-16 units: each is written on its own.
        write("string", StringSerializer.INSTANCE,
                "", "hello", "\u00fc", "\u4e2d\u6587", "\ud83d\ude00", "nul\u0000", longer.toString(), null);
    }

    static void arrays() throws IOException {
        write("byte_array", BytePrimitiveArraySerializer.INSTANCE, new byte[0], new byte[] {1, 2, -3});
        write("boolean_array", BooleanPrimitiveArraySerializer.INSTANCE, new boolean[] {true, false, true});
        write("short_array", ShortPrimitiveArraySerializer.INSTANCE, new short[] {1, -1, 300});
        write("char_array", CharPrimitiveArraySerializer.INSTANCE, new char[] {'x', '\u4e2d'});
        write("int_array", IntPrimitiveArraySerializer.INSTANCE, new int[0], new int[] {1, -2, 3});
        write("long_array", LongPrimitiveArraySerializer.INSTANCE, new long[] {Long.MAX_VALUE, 5});
        write("float_array", FloatPrimitiveArraySerializer.INSTANCE, new float[] {1.5f, -0f});
        write("double_array", DoublePrimitiveArraySerializer.INSTANCE, new double[] {12.5, -1});
        write("string_array", StringArraySerializer.INSTANCE, new String[] {"a", null, "\u00e9"}, new String[0]);
        write("integer_array", new GenericArraySerializer<>(Integer.class, IntSerializer.INSTANCE),
                new Integer[] {1, null, 3});
    }

    static void collections() throws IOException {
        write("list_string", new ListSerializer<>(StringSerializer.INSTANCE),
                Arrays.asList("a", "bc"), new ArrayList<>());
        write("list_long", new ListSerializer<>(LongSerializer.INSTANCE), Arrays.asList(1L, -1L));
        Map<String, Integer> m = new LinkedHashMap<>();
        m.put("one", 1);
        m.put("none", null);
        m.put("two", 2);
        write("map_string_int", new MapSerializer<>(StringSerializer.INSTANCE, IntSerializer.INSTANCE),
                m, new LinkedHashMap<>());
        // What type extraction gives a List<String> and a Map<String, Long> (Flink 2.x):
        // NullableSerializer(ListSerializer(NullableSerializer(String))) and
        // NullableSerializer(MapSerializer(NullableSerializer(String), Long)).
        write("extracted_list_string", of(new TypeHint<List<String>>() {}), Arrays.asList("x", null), null);
        Map<String, Long> attrs = new LinkedHashMap<>();
        attrs.put("k", 9L);
        attrs.put("gone", null);
        write("extracted_map_string_long", of(new TypeHint<Map<String, Long>>() {}), attrs);
    }

    static void composites() throws IOException {
        write("tuple2", of(new TypeHint<Tuple2<String, Integer>>() {}), Tuple2.of("a", 1), Tuple2.of("", -1));
        write("tuple3", of(new TypeHint<Tuple3<Long, Double, Boolean>>() {}), Tuple3.of(5L, 0.25, true));
        RowSerializer row = new RowSerializer(new TypeSerializer<?>[] {StringSerializer.INSTANCE, IntSerializer.INSTANCE});
        write("row", row, Row.of("a", 1), Row.ofKind(RowKind.UPDATE_AFTER, null, 5),
                Row.ofKind(RowKind.DELETE, "z", null), Row.ofKind(RowKind.UPDATE_BEFORE, null, null));
        TypeSerializer<?>[] ten = new TypeSerializer<?>[10];
        Arrays.fill(ten, LongSerializer.INSTANCE);
        write("row10", new RowSerializer(ten),
                Row.ofKind(RowKind.INSERT, 0L, null, 2L, null, 4L, null, 6L, null, 8L, null),
                Row.ofKind(RowKind.DELETE, null, 1L, null, 3L, null, 5L, null, 7L, null, 9L));
        write("enum", new EnumSerializer<>(Side.class), Side.BUY, Side.HOLD, Side.SELL);
    }

    static void times() throws IOException {
        write("instant", InstantSerializer.INSTANCE,
                Instant.ofEpochSecond(1700000000L, 123456789), Instant.EPOCH, Instant.ofEpochSecond(-5, 1), null);
        write("date", DateSerializer.INSTANCE, new java.util.Date(1700000000000L), new java.util.Date(-1L), null);
        write("sql_date", SqlDateSerializer.INSTANCE, new java.sql.Date(1700000000000L), null);
        write("sql_time", SqlTimeSerializer.INSTANCE, new java.sql.Time(45296789L), null);
        java.sql.Timestamp ts = new java.sql.Timestamp(1700000000123L);
        ts.setNanos(123456789);
        write("sql_timestamp", SqlTimestampSerializer.INSTANCE, ts, new java.sql.Timestamp(-1L), null);
        write("local_date", LocalDateSerializer.INSTANCE,
                LocalDate.of(2024, 2, 29), LocalDate.of(-5, 12, 31), null);
        write("local_time", LocalTimeSerializer.INSTANCE,
                LocalTime.of(23, 59, 58, 999999999), LocalTime.MIDNIGHT, null);
        write("local_date_time", LocalDateTimeSerializer.INSTANCE,
                LocalDateTime.of(2024, 2, 29, 12, 30, 15, 500), null);
    }

    static void numbers() throws IOException {
        write("big_integer", BigIntSerializer.INSTANCE,
                BigInteger.ZERO, BigInteger.ONE, BigInteger.TEN, BigInteger.valueOf(-1),
                BigInteger.valueOf(255), new BigInteger("-123456789012345678901234567890"), null);
        write("big_decimal", BigDecSerializer.INSTANCE,
                BigDecimal.ZERO, BigDecimal.ONE, BigDecimal.TEN, new BigDecimal("12.50"),
                new BigDecimal("-3.14159"), new BigDecimal("1E+5"),
                new BigDecimal("123456789012345678901234567890.123456789"), null);
    }

    static void pojos() throws IOException {
        TypeSerializer<Order> order = of(Order.class);
        write("pojo_order", order, new Order("u1", 12.5));
        write("pojo_order_nulls", order, null, new Order(null, -1));
        PriorityOrder p = new PriorityOrder();
        p.userId = "p";
        p.amount = 1;
        p.priority = 3;
        write("pojo_order_subclass", order, p);
        Event e = new Event();
        e.userId = "u7";
        e.ts = 1700000000000L;
        e.count = 3;
        e.tags = Arrays.asList("new", null, "vip");
        e.attrs = new LinkedHashMap<>();
        e.attrs.put("clicks", 12L);
        e.attrs.put("none", null);
        e.side = Side.SELL;
        e.at = Instant.ofEpochSecond(1700000000L, 5);
        e.price = new BigDecimal("19.99");
        e.created = new java.util.Date(1700000000000L);
        e.seen = new java.sql.Timestamp(1700000000001L);
        e.payload = new byte[] {1, 2, 3};
        e.scores = new int[] {10, 20};
        e.order = new Order("u1", 12.5);
        e.flag = true;
        e.initial = 'Z';
        Event empty = new Event();
        write("pojo_event", of(Event.class), e, empty);
    }
}
