//! An idle partition does not hold back the watermark: an unbounded source over a topic of
//! two partitions, one of which never receives a record, with idleness configured, fires
//! the event-time windows of the other partition's records while the job runs (at
//! parallelism 1 one subtask reads both partitions; at 2 the subtask of the empty partition
//! is idle as a whole), on both state backends. Without idleness the empty partition holds
//! the watermark back and no window fires (the control that the test exercises idleness).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{produce, Broker, Out};
use typeinfo_kafka::{KafkaSource, Utf8};
use typeinfo_runtime::{
    JobClient, StateBackend, StreamExecutionEnvironment, TumblingEventTimeWindows,
    WatermarkStrategy,
};

/// Partition 0: 30 records, timestamps 1000, 1100, ..., 3900; partition 1: none.
fn fill(broker: &Broker, topic: &str) {
    broker.topic(topic, 2);
    let values: Vec<String> = (0..30).map(|i| format!("r{i}")).collect();
    let records: Vec<Out<'_>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Out {
            partition: 0,
            key: None,
            value: v.as_bytes(),
            timestamp: Some(1000 + 100 * i as i64),
        })
        .collect();
    produce(&broker.bootstrap(), topic, &records);
}

type Fired = Arc<Mutex<Vec<(i64, u64)>>>;

/// Starts the job (unbounded source -> one-second tumbling windows counting records) and
/// returns it with the windows fired so far, (window start, count), and the number of
/// records read so far.
fn start(
    broker: &Broker,
    topic: &str,
    parallelism: u32,
    backend: StateBackend,
    idleness: Option<Duration>,
) -> (JobClient, Fired, Arc<AtomicUsize>) {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism).set_state_backend(backend);
    let source = KafkaSource::builder(&broker.bootstrap())
        .topics([topic])
        .value_deserializer(Utf8)
        .build()
        .unwrap();
    let mut watermarks = WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO);
    if let Some(idleness) = idleness {
        watermarks = watermarks.with_idleness(idleness);
    }
    let fired: Fired = Arc::default();
    let sink = Arc::clone(&fired);
    let read = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&read);
    env.from_source(source, watermarks, "records")
        .map(move |r: String| {
            counter.fetch_add(1, Ordering::SeqCst);
            r
        })
        .key_by(|_: &String| 0u8)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(1)))
        .aggregate_with(typeinfo_runtime::functions::Count, |_: &u8, w, n: u64| {
            (w.start, n)
        })
        .add_sink(move |window: (i64, u64)| sink.lock().unwrap().push(window));
    (env.execute_async("idle partition").unwrap(), fired, read)
}

fn stop(job: JobClient) {
    job.cancel();
    let _ = job.wait();
}

#[test]
fn an_idle_partition_does_not_hold_back_the_watermark() {
    let broker = Broker::start();
    let cases = [
        (1, StateBackend::Heap),
        (2, StateBackend::Heap),
        (2, StateBackend::rocksdb()),
    ];
    for (n, (parallelism, backend)) in cases.into_iter().enumerate() {
        let topic = format!("idle-{n}");
        fill(&broker, &topic);
        let (job, fired, _) = start(
            &broker,
            &topic,
            parallelism,
            backend,
            Some(Duration::from_millis(200)),
        );
        // The watermark reaches 3899 (the last record's time - 1): the windows that end
        // at 2000 and 3000 fire; the one of [3000, 4000) waits for later records.
        let until = Instant::now() + Duration::from_secs(30);
        while fired.lock().unwrap().len() < 2 {
            assert!(
                Instant::now() < until,
                "parallelism {parallelism}: windows fired {:?}",
                fired.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        stop(job);
        let mut got = fired.lock().unwrap().clone();
        got.sort();
        assert_eq!(got, [(1000, 10), (2000, 10)], "parallelism {parallelism}");
    }
}

#[test]
fn without_idleness_the_empty_partition_holds_the_watermark_back() {
    let broker = Broker::start();
    fill(&broker, "held");
    let (job, fired, read) = start(&broker, "held", 1, StateBackend::Heap, None);
    let until = Instant::now() + Duration::from_secs(30);
    while read.load(Ordering::SeqCst) < 30 {
        assert!(Instant::now() < until, "the records were not read");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Had the watermark moved, the windows would fire right after the records were read;
    // it waits one more second, five times the idleness of the test above.
    std::thread::sleep(Duration::from_secs(1));
    stop(job);
    assert_eq!(*fired.lock().unwrap(), Vec::<(i64, u64)>::new());
}
