//! Throughput of Kafka -> job -> Kafka beside plain librdkafka client loops, against the same
//! broker in the same run (the figures of the README's Kafka section; `kafka/throughput.sh`
//! starts the test broker on loopback and runs this in release mode).
//!
//! Each step moves the same records (`--records`, `--value-bytes` each, over
//! `--partitions` partitions); every round (`--rounds`) runs every step on topics of its
//! own, deleted after the round, and the table shows each step's median round (and the
//! fastest and slowest):
//! - `client produce`: a plain producer writes them to topic `in` (the time includes the
//!   final flush);
//! - `client consume`: a plain consumer reads `in` from the start to its end;
//! - `client consume -> produce`: one loop reads `in` and writes every record to
//!   `out-client`: the hand-written equivalent of the job below;
//! - `job source -> sink, ...`: a job of `KafkaSource` (bounded) and `KafkaSink` copies
//!   `in` to `out-job*`: at parallelism 1 (one subtask, like the loop above) and at
//!   `--parallelism`, at least once (no checkpoints), then exactly once (checkpoints every
//!   second, a transaction per subtask and checkpoint). A job's time includes starting and
//!   finishing it.
//!
//! Every copy is checked afterwards (not timed): a `read_committed` consumer reads all of
//! its records.
//!
//! `cargo run --release -p typeinfo-kafka --example throughput -- BROKERS [--records N]
//! [--rounds R]`

use std::time::{Duration, Instant};

use clap::Parser;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use typeinfo_kafka::{DeliveryGuarantee, KafkaSink, KafkaSource, RawBytes};
use typeinfo_runtime::{CheckpointConfig, StreamExecutionEnvironment, WatermarkStrategy};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Kafka -> job -> Kafka beside plain client loops, on one broker.
#[derive(Parser, Debug)]
#[command(name = "throughput")]
struct Cli {
    /// The Kafka bootstrap servers (HOST:PORT)
    #[arg(value_name = "BROKERS")]
    brokers: String,
    /// Records to move in every step
    #[arg(long, default_value_t = 500_000)]
    records: usize,
    /// Bytes of each record's value
    #[arg(long, default_value_t = 100)]
    value_bytes: usize,
    /// Partitions of every topic
    #[arg(long, default_value_t = 2)]
    partitions: i32,
    /// Parallelism of the jobs
    #[arg(long, default_value_t = 2)]
    parallelism: u32,
    /// Rounds of every step
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Pause before every step, so that the broker's periodic save of what the step before
    /// wrote is not timed with the step (noida-db saves its topics within about two seconds)
    #[arg(long, default_value_t = 3000)]
    settle_ms: u64,
}

/// The steps, in the order every round runs them.
const STEPS: [&str; 6] = [
    "client produce",
    "client consume",
    "client consume -> produce (one loop)",
    "job source -> sink, parallelism 1, at least once",
    "job source -> sink, `--parallelism`, at least once",
    "job source -> sink, `--parallelism`, exactly once (checkpoint every 1 s)",
];

/// The topics of round `r`: input, then the copies of the client loop and the three jobs.
fn topics(r: usize) -> [String; 5] {
    ["in", "out-client", "out-job-1", "out-job", "out-job-eo"].map(|t| format!("{t}-{r}"))
}

/// Prints one row: what moved the records, and how fast in its median round (and in its
/// slowest and fastest).
fn row(cli: &Cli, what: &str, mut rounds: Vec<Duration>) {
    rounds.sort();
    let rate = |d: &Duration| cli.records as f64 / d.as_secs_f64();
    let median = rounds[rounds.len() / 2];
    let mb = (cli.records * cli.value_bytes) as f64 / 1e6;
    println!(
        "| {what} | {:.2} | {:.0} | {:.0} - {:.0} | {:.1} |",
        median.as_secs_f64(),
        rate(&median),
        rate(&rounds[rounds.len() - 1]),
        rate(&rounds[0]),
        mb / median.as_secs_f64()
    );
}

fn producer(brokers: &str) -> Result<BaseProducer> {
    Ok(ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()?)
}

/// Sends a record, waiting for room in the local queue when it is full.
fn send(producer: &BaseProducer, mut record: BaseRecord<'_, [u8], [u8]>) -> Result<()> {
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((rdkafka::error::KafkaError::MessageProduction(_), back)) => {
                record = back;
                producer.poll(Duration::from_millis(1));
            }
            Err((e, _)) => return Err(e.into()),
        }
    }
}

/// A consumer of every partition of `topic` from the start, `read_committed`.
fn consumer(cli: &Cli, topic: &str) -> Result<BaseConsumer> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &cli.brokers)
        .set("group.id", "throughput")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()?;
    // As the source's reader does: the start as an exact offset from the partition's
    // watermarks (assigning at `Offset::Beginning` costs librdkafka about half a second
    // before the first record on this broker).
    let mut tpl = TopicPartitionList::new();
    for p in 0..cli.partitions {
        let (low, _) = consumer.fetch_watermarks(topic, p, Duration::from_secs(30))?;
        tpl.add_partition_offset(topic, p, Offset::Offset(low))?;
    }
    consumer.assign(&tpl)?;
    Ok(consumer)
}

/// Reads `cli.records` records of `topic`, handing each to `each`; fails after 60 s
/// without a record.
fn consume(cli: &Cli, topic: &str, mut each: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
    let consumer = consumer(cli, topic)?;
    let mut read = 0;
    let mut last = Instant::now();
    while read < cli.records {
        // As the source's reader does: no wait while records come, a short one otherwise.
        let wait = if last.elapsed() < Duration::from_millis(1) {
            Duration::ZERO
        } else {
            Duration::from_millis(1)
        };
        match consumer.poll(wait) {
            Some(Ok(m)) => {
                each(m.payload().unwrap_or_default())?;
                read += 1;
                last = Instant::now();
            }
            Some(Err(e)) => return Err(e.into()),
            None if last.elapsed() > Duration::from_secs(60) => {
                return Err(format!("`{topic}` holds {read} of {} records", cli.records).into())
            }
            None => {}
        }
    }
    Ok(())
}

fn client_produce(cli: &Cli, topic: &str) -> Result<Duration> {
    let producer = producer(&cli.brokers)?;
    let value = vec![b'v'; cli.value_bytes];
    let start = Instant::now();
    for i in 0..cli.records {
        let partition = (i % cli.partitions as usize) as i32;
        send(
            &producer,
            BaseRecord::to(topic)
                .payload(&value[..])
                .partition(partition),
        )?;
        producer.poll(Duration::ZERO);
    }
    producer.flush(Duration::from_secs(120))?;
    Ok(start.elapsed())
}

fn client_pipe(cli: &Cli, from: &str, to: &str) -> Result<Duration> {
    let producer = producer(&cli.brokers)?;
    let start = Instant::now();
    consume(cli, from, |value| {
        send(&producer, BaseRecord::to(to).payload(value))?;
        producer.poll(Duration::ZERO);
        Ok(())
    })?;
    producer.flush(Duration::from_secs(120))?;
    Ok(start.elapsed())
}

fn job(
    cli: &Cli,
    parallelism: u32,
    [from, to]: [&str; 2],
    guarantee: DeliveryGuarantee,
) -> Result<Duration> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism);
    let checkpoints = tempfile::tempdir()?;
    if guarantee == DeliveryGuarantee::ExactlyOnce {
        env.enable_checkpointing(CheckpointConfig::new(
            checkpoints.path(),
            Duration::from_secs(1),
        ));
    }
    let source = KafkaSource::builder(&cli.brokers)
        .topics([from])
        .bounded()
        .value_deserializer(RawBytes)
        .build()?;
    let sink = KafkaSink::builder(&cli.brokers, RawBytes)
        .topic(to)
        .delivery_guarantee(guarantee)
        .transactional_id_prefix(to)
        .build()?;
    env.from_source(source, WatermarkStrategy::no_watermarks(), from)
        .sink_to(sink);
    let start = Instant::now();
    env.execute(to)?;
    Ok(start.elapsed())
}

/// Runs every step on the topics of round `r`, checks the copies, deletes the topics:
/// the time of each step.
fn round(cli: &Cli, admin: &AdminClient<DefaultClientContext>, r: usize) -> Result<Vec<Duration>> {
    let names = topics(r);
    let [input, client, job_1, job_alo, job_eo] = &names;
    let new: Vec<NewTopic<'_>> = names
        .iter()
        .map(|t| NewTopic::new(t, cli.partitions, TopicReplication::Fixed(1)))
        .collect();
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    for created in futures_executor::block_on(admin.create_topics(&new, &options))? {
        created.map_err(|(t, e)| format!("create `{t}`: {e}"))?;
    }
    let settle = || std::thread::sleep(Duration::from_millis(cli.settle_ms));
    settle();
    let mut times = vec![client_produce(cli, input)?];
    settle();
    let start = Instant::now();
    consume(cli, input, |_| Ok(()))?;
    times.push(start.elapsed());
    settle();
    times.push(client_pipe(cli, input, client)?);
    settle();
    let at_least_once = DeliveryGuarantee::AtLeastOnce;
    times.push(job(cli, 1, [input, job_1], at_least_once)?);
    settle();
    times.push(job(cli, cli.parallelism, [input, job_alo], at_least_once)?);
    settle();
    let exactly_once = DeliveryGuarantee::ExactlyOnce;
    times.push(job(cli, cli.parallelism, [input, job_eo], exactly_once)?);
    for copy in [client, job_1, job_alo, job_eo] {
        consume(cli, copy, |_| Ok(()))?;
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    futures_executor::block_on(admin.delete_topics(&names, &options))?;
    Ok(times)
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &cli.brokers)
        .create()?;
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); STEPS.len()];
    for r in 0..cli.rounds {
        for (step, time) in round(&cli, &admin, r)?.into_iter().enumerate() {
            times[step].push(time);
        }
    }
    println!(
        "{} records of {} bytes over {} partitions, jobs at parallelism {}, median of {} \
         rounds (every copy read back in full)\n",
        cli.records, cli.value_bytes, cli.partitions, cli.parallelism, cli.rounds
    );
    println!("| step | seconds | records/s | slowest - fastest round | MB/s |");
    println!("|---|---:|---:|---:|---:|");
    for (what, rounds) in STEPS.iter().zip(times) {
        row(&cli, what, rounds);
    }
    Ok(())
}
