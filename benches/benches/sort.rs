//! The batch sorter beside what a user would write instead, on the same records in the same
//! run: `slice::sort_unstable_by` over the deserialized records (key, then timestamp), and
//! the sorter without normalized keys (every comparison reads the two serialized keys).
//!
//! The records: one million `(String, i64, u64)` with keys `customer-<16 hex digits>` (25
//! bytes, distinct past the 16-byte prefix only in 7 hex digits, so some prefixes tie),
//! timestamps in 0..1000 and a value. Each side is given its records outside the timing and
//! timed on sorting them: the `Vec` gets a clone of the records, the sorter has them added
//! (serialized into its segments), and `finish` sorts. `normalized_key_sorter_add_and_sort`
//! times adding and sorting together (what the sorter costs a job end to end).
//! `python3 benches/report_sort.py` prints the ratios and checks the target (the
//! sorter at least 3x faster than `sort_unstable_by` on string keys), on both figures.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use typeinfo_runtime::sort::{NormalizedKeySorter, SortConfig};

fn records(n: u64) -> Vec<(String, i64, u64)> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|i| {
            // xorshift64*: deterministic, well spread.
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let h = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
            (format!("customer-{h:016x}"), (h % 1000) as i64, i)
        })
        .collect()
}

fn filled(records: &[(String, i64, u64)], normalized: bool) -> NormalizedKeySorter<String, u64> {
    let mut sorter =
        NormalizedKeySorter::<String, u64>::new(SortConfig::default().normalized_keys(normalized))
            .unwrap();
    for (k, ts, v) in records {
        sorter.add(k, *ts, v).unwrap();
    }
    assert_eq!(sorter.spilled_runs(), 0, "the bench sorts in memory");
    sorter
}

fn bench(c: &mut Criterion) {
    let n = if cfg!(debug_assertions) {
        2_000
    } else {
        1_000_000
    };
    let data = records(n);
    // Same order from both (the sorter is stable; the keys are distinct).
    let mut expected = data.clone();
    expected.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut s = NormalizedKeySorter::<String, u64>::new(SortConfig::default()).unwrap();
    for (k, ts, v) in &data {
        s.add(k, *ts, v).unwrap();
    }
    let got: Vec<_> = s.finish().unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, expected, "the sorter and sort_unstable_by agree");

    let mut group = c.benchmark_group("sort");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(n));
    for (name, normalized) in [
        ("normalized_key_sorter", true),
        ("serialized_key_sorter", false),
    ] {
        group.bench_with_input(BenchmarkId::new(name, n), &data, |b, d| {
            b.iter_batched(
                || filled(d, normalized),
                |sorter| sorter.finish().unwrap(),
                BatchSize::LargeInput,
            )
        });
    }
    group.bench_with_input(
        BenchmarkId::new("normalized_key_sorter_add_and_sort", n),
        &data,
        |b, d| b.iter(|| black_box(filled(d, true).finish().unwrap())),
    );
    group.bench_with_input(BenchmarkId::new("sort_unstable_by", n), &data, |b, d| {
        b.iter_batched(
            || d.clone(),
            |mut v| {
                v.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
                v
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
