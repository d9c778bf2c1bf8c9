//! Kafka to Kafka: orders (JSON) from topic `orders` are enriched with their user's region,
//! counted per region in one-minute event-time windows (the Kafka timestamps), and written
//! as lines to topic `orders-per-region`, at least once (exactly once on a broker with
//! transactions: `DeliveryGuarantee::ExactlyOnce` and a transactional id prefix).
//!
//! `cargo run -p typeinfo-kafka --example orders_per_user -- [BROKERS] [--seed]`: `BROKERS`
//! (default `127.0.0.1:9092`) are the bootstrap servers, `--seed` first creates the topics
//! and writes 1,000 orders; `--help` prints the usage.

use std::time::Duration;

use clap::Parser;
use serde::{Deserialize, Serialize};
use typeinfo::TypeInfo;
use typeinfo_kafka::{DeliveryGuarantee, Json, KafkaAdmin, KafkaSink, KafkaSource, Utf8};
use typeinfo_runtime::{
    functions::Count, StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy,
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
    /// First create the topics and write 1,000 orders into `orders`
    #[arg(long)]
    seed: bool,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let brokers = cli.brokers.as_str();
    if cli.seed {
        seed(brokers)?;
    }
    let orders = KafkaSource::builder(brokers)
        .topics(["orders"])
        .bounded()
        .value_deserializer(Json::<Order>::new())
        .build()?;
    let sink = KafkaSink::builder(brokers, Utf8)
        .topic("orders-per-region")
        .key_serializer(|line: &String| line.split(' ').next().unwrap_or("").as_bytes().to_vec())
        .delivery_guarantee(DeliveryGuarantee::AtLeastOnce)
        .build()?;

    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let watermarks = WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(5))
        .with_idleness(Duration::from_secs(10));
    env.from_source(orders, watermarks, "orders")
        .map(|o: Order| (region(o.user).to_owned(), o.amount))
        .key_by(|(region, _): &(String, i64)| region.clone())
        .window(TumblingEventTimeWindows::of(Duration::from_secs(60)))
        .aggregate_with(Count, |region: &String, w, n: u64| {
            format!("{region} {}..{} {n}", w.start, w.end)
        })
        .sink_to(sink);
    env.execute("orders per region")?;
    println!("wrote the counts to `orders-per-region`");
    Ok(())
}

/// Creates the topics and writes 1,000 orders, one every 300 ms of event time.
fn seed(brokers: &str) -> Result<(), Box<dyn std::error::Error>> {
    let admin = KafkaAdmin::new(brokers)?;
    admin.create_topic("orders", 3)?;
    admin.create_topic("orders-per-region", 2)?;
    let env = StreamExecutionEnvironment::new();
    let sink = KafkaSink::builder(brokers, Json::<Order>::new())
        .topic("orders")
        .build()?;
    env.from_sequence(0, 999)
        .map(|i: i64| Order {
            user: (i * 7 % 13) as u32,
            amount: i % 50,
            ts: i * 300,
        })
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|o: &Order, _| o.ts),
        )
        .sink_to(sink);
    env.execute("seed orders")?;
    Ok(())
}
