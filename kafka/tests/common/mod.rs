//! A real Kafka-protocol broker for the tests (noida-db's Kafka service, which `./dev setup`
//! installs through `kafka/dev-setup.sh`), started on a free loopback port with its data in
//! a temporary directory, killed when dropped, and stoppable and restartable on the same
//! port and data; and plain-client helpers that write and read topics without the
//! connector, so that the tests check it against the broker, not against itself.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)] // a test panics on what it does not expect

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

/// Where the broker is: `$TYPEINFO_NOIDA_DB`, else where `kafka/dev-setup.sh` installs it.
fn broker_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("TYPEINFO_NOIDA_DB") {
        return PathBuf::from(path);
    }
    let tools = std::env::var_os("TYPEINFO_TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/typeinfo-tools")
        });
    tools.join("noida-db/bin/noida-db")
}

/// A Kafka-protocol broker (noida-db, its Kafka service alone) with its data in a temporary
/// directory, on a free loopback port, killed when dropped.
pub struct Broker {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

impl Broker {
    pub fn start() -> Broker {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut broker = Broker {
            child: None,
            port,
            dir: tempfile::tempdir().unwrap(),
        };
        broker.spawn();
        broker
    }

    /// Starts the broker process on the broker's port and data, and waits until it listens.
    fn spawn(&mut self) {
        let binary = broker_binary();
        assert!(
            binary.exists(),
            "the Kafka test broker is missing at {}: run `./dev setup` (it calls \
             kafka/dev-setup.sh, which installs noida-db from PyPI)",
            binary.display()
        );
        let log = |name: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.path().join(name))
                .unwrap()
        };
        let child = Command::new(&binary)
            .args(["start", "--only", "kafka", "--host", "127.0.0.1"])
            .args(["--kafka-port", &self.port.to_string()])
            .arg("--data-dir")
            .arg(self.dir.path().join("data"))
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log("broker.log"))
            .stderr(log("broker.err"))
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {} ({e}): run `./dev setup`", binary.display())
            });
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < until,
                "the broker did not start listening on port {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the broker as `noida-db down` does (SIGTERM: it saves its topics, offsets and
    /// records to its data directory and exits), for [`Broker::restart`]. A SIGKILL would
    /// lose what arrived since its last save: it saves from time to time (within two
    /// seconds, as we saw) and when it stops, not at every write.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let status = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success(), "kill -TERM {}: {status}", child.id());
            child.wait().unwrap();
        }
    }

    /// Starts the broker again, stopped or not, on the same port with the data it saved.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Creates `topic` with `partitions` partitions, kept forever (`retention.ms=-1`: the
    /// broker deletes by record time, and the tests' records carry timestamps of 1970).
    pub fn topic(&self, topic: &str, partitions: i32) {
        use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
        let admin: AdminClient<_> = ClientConfig::new()
            .set("bootstrap.servers", self.bootstrap())
            .create()
            .unwrap();
        let new =
            NewTopic::new(topic, partitions, TopicReplication::Fixed(1)).set("retention.ms", "-1");
        let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
        for result in futures_executor::block_on(admin.create_topics([&new], &options)).unwrap() {
            result.unwrap();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A record to write: partition, key, value, timestamp.
pub struct Out<'a> {
    pub partition: i32,
    pub key: Option<&'a [u8]>,
    pub value: &'a [u8],
    pub timestamp: Option<i64>,
}

/// Writes `records` to `topic` with a plain producer and waits until the broker has them.
pub fn produce(bootstrap: &str, topic: &str, records: &[Out<'_>]) {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    for r in records {
        let mut record = BaseRecord::<[u8], [u8]>::to(topic)
            .payload(r.value)
            .partition(r.partition);
        if let Some(k) = r.key {
            record = record.key(k);
        }
        if let Some(ts) = r.timestamp {
            record = record.timestamp(ts);
        }
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, back)) => {
                    record = back;
                    producer.poll(Duration::from_millis(10));
                }
            }
        }
        producer.poll(Duration::ZERO);
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

/// A record read back: partition, offset, key, value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct In {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
}

/// Every record of `topic` (all `partitions`) with a plain consumer, read up to the end each
/// partition has now (for `read_committed`: its last stable offset), with `isolation`
/// (`read_committed` or `read_uncommitted`).
pub fn read_all(bootstrap: &str, topic: &str, partitions: i32, isolation: &str) -> Vec<In> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("group.id", "typeinfo-kafka-tests")
        .set("isolation.level", isolation)
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let mut at_end = vec![false; partitions as usize];
    let mut out = Vec::new();
    let until = Instant::now() + Duration::from_secs(30);
    while at_end.contains(&false) {
        assert!(
            Instant::now() < until,
            "reading `{topic}` did not reach its end"
        );
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => at_end[p as usize] = true,
            Some(Err(e)) => panic!("reading `{topic}`: {e}"),
            Some(Ok(m)) => out.push(In {
                partition: m.partition(),
                offset: m.offset(),
                key: m.key().map(<[u8]>::to_vec),
                value: m.payload().unwrap_or_default().to_vec(),
            }),
        }
    }
    out.sort();
    out
}
