//! Kafka to Kafka: orders (JSON) from topic `orders` are enriched with their user's region,
//! counted per region in one-minute event-time windows (the Kafka timestamps), and written
//! as lines to topic `orders-per-region`, at least once (exactly once on a broker with
//! transactions: `--guarantee exactly-once`, a transaction per subtask and checkpoint).
//!
//! ```text
//! cargo run -p typeinfo-kafka --example orders_per_user -- [BROKERS] [--seed] [--seed-only]
//!     [--orders N] [--output-topic T] [--guarantee none|at-least-once|exactly-once]
//!     [--parallelism P] [--state heap|rocksdb]
//!     [--checkpoint-dir DIR [--checkpoint-interval-ms MS]] [--restore PATH]
//!     [--producer-property KEY=VALUE ...]
//! ```
//!
//! `BROKERS` (default `127.0.0.1:9092`) are the bootstrap servers; `--seed` first creates the
//! topics and writes `--orders` orders (1,000 by default; `--seed-only` then stops). With
//! `--checkpoint-dir` the job checkpoints (the source's offsets, the windows, the sink's
//! flush or transaction) and `--restore` starts it from a checkpoint or from the latest
//! completed one in a checkpoint directory: `kafka/tests/crash.rs` kills it with SIGKILL
//! and restarts it that way. `--help` prints every flag.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use serde::{Deserialize, Serialize};
use typeinfo::TypeInfo;
use typeinfo_kafka::{DeliveryGuarantee, Json, KafkaAdmin, KafkaSink, KafkaSource, Utf8};
use typeinfo_runtime::{
    functions::Count, CheckpointConfig, RestoreSettings, StateBackend, StreamExecutionEnvironment,
    TumblingEventTimeWindows, WatermarkStrategy,
};

#[derive(TypeInfo, Serialize, Deserialize, Clone, Debug)]
struct Order {
    user: u32,
    amount: i64,
    ts: i64,
}

fn region(user: u32) -> &'static str {
    ["north", "south", "east", "west"][user as usize % 4]
}

/// Kafka to Kafka: orders from topic `orders`, counted per region in one-minute event-time
/// windows, written as lines to topic `orders-per-region`.
#[derive(Parser, Debug)]
#[command(name = "orders_per_user")]
struct Cli {
    /// The Kafka bootstrap servers (HOST:PORT[,HOST:PORT...])
    #[arg(value_name = "BROKERS", default_value = "127.0.0.1:9092")]
    brokers: String,
    /// First create the topics and write the orders into `orders`
    #[arg(long)]
    seed: bool,
    /// Create the topics and write the orders, then stop (no job)
    #[arg(long)]
    seed_only: bool,
    /// How many orders `--seed` writes, one every 300 ms of event time
    #[arg(long, default_value_t = 1_000)]
    orders: i64,
    /// The topic the counts go to
    #[arg(long, default_value = "orders-per-region")]
    output_topic: String,
    /// none | at-least-once | exactly-once
    #[arg(long, default_value = "at-least-once")]
    guarantee: String,
    /// The job's parallelism
    #[arg(long, default_value_t = 2)]
    parallelism: u32,
    /// Where keyed state lives: heap | rocksdb
    #[arg(long, default_value = "heap")]
    state: String,
    /// Checkpoint into this directory
    #[arg(long)]
    checkpoint_dir: Option<PathBuf>,
    /// A checkpoint every this many ms (with --checkpoint-dir)
    #[arg(long, default_value_t = 200, requires = "checkpoint_dir")]
    checkpoint_interval_ms: u64,
    /// Start from this checkpoint or savepoint (a checkpoint directory: its latest completed one)
    #[arg(long)]
    restore: Option<PathBuf>,
    /// A librdkafka property of the sink's producer, KEY=VALUE (repeatable), as `linger.ms=200`
    #[arg(long = "producer-property", value_name = "KEY=VALUE")]
    producer_properties: Vec<String>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let brokers = cli.brokers.as_str();
    if cli.seed || cli.seed_only {
        seed(brokers, cli.orders, &cli.output_topic)?;
        if cli.seed_only {
            return Ok(());
        }
    }
    let guarantee = match cli.guarantee.as_str() {
        "none" => DeliveryGuarantee::None,
        "at-least-once" => DeliveryGuarantee::AtLeastOnce,
        "exactly-once" => DeliveryGuarantee::ExactlyOnce,
        other => return Err(format!("unknown --guarantee `{other}`").into()),
    };
    let orders = KafkaSource::builder(brokers)
        .topics(["orders"])
        .bounded()
        .value_deserializer(Json::<Order>::new())
        .build()?;
    let mut sink = KafkaSink::builder(brokers, Utf8)
        .topic(&cli.output_topic)
        .key_serializer(|line: &String| line.split(' ').next().unwrap_or("").as_bytes().to_vec())
        .delivery_guarantee(guarantee)
        .transactional_id_prefix("orders-per-region");
    for property in &cli.producer_properties {
        let (key, value) = property
            .split_once('=')
            .ok_or_else(|| format!("--producer-property `{property}` is not KEY=VALUE"))?;
        sink = sink.property(key, value);
    }
    let sink = sink.build()?;

    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(cli.parallelism)
        .set_state_backend(StateBackend::parse(&cli.state)?);
    if let Some(dir) = &cli.checkpoint_dir {
        let interval = Duration::from_millis(cli.checkpoint_interval_ms);
        env.enable_checkpointing(CheckpointConfig::new(dir, interval));
    }
    if let Some(path) = &cli.restore {
        env.restore_from(RestoreSettings {
            path: path.clone(),
            allow_non_restored_state: false,
        });
    }
    let watermarks = WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(5))
        .with_idleness(Duration::from_secs(10));
    env.from_source(orders, watermarks, "orders")
        .uid("orders")
        .map(|o: Order| (region(o.user).to_owned(), o.amount))
        .key_by(|(region, _): &(String, i64)| region.clone())
        .window(TumblingEventTimeWindows::of(Duration::from_secs(60)))
        .aggregate_with(Count, |region: &String, w, n: u64| {
            format!("{region} {}..{} {n}", w.start, w.end)
        })
        .uid("counts")
        .sink_to(sink)
        .uid("sink");
    env.execute("orders per region")?;
    println!("wrote the counts to `{}`", cli.output_topic);
    Ok(())
}

/// Creates the topics and writes `orders` orders, one every 300 ms of event time, the last
/// one about now (a broker deletes records older than its retention by their timestamps).
fn seed(brokers: &str, orders: i64, output_topic: &str) -> Result<(), Box<dyn std::error::Error>> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    let base = now / 60_000 * 60_000 - orders * 300;
    let admin = KafkaAdmin::new(brokers)?;
    admin.create_topic("orders", 3)?;
    admin.create_topic(output_topic, 2)?;
    let env = StreamExecutionEnvironment::new();
    let sink = KafkaSink::builder(brokers, Json::<Order>::new())
        .topic("orders")
        .build()?;
    env.from_sequence(0, orders - 1)
        .map(move |i: i64| Order {
            user: (i * 7 % 13) as u32,
            amount: i % 50,
            ts: base + i * 300,
        })
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|o: &Order, _| o.ts),
        )
        .sink_to(sink);
    env.execute("seed orders")?;
    Ok(())
}
