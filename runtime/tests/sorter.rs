//! The batch sorter: records come out grouped as `Eq` groups keys, in the order the key's
//! comparator gives, by timestamp within a key and in arrival order on ties; the same with
//! and without normalized keys, in memory and spilled to disk; spill files never outlive
//! the sorter; bad configuration and a missing spill directory are clear errors.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::fmt::Debug;

use proptest::prelude::*;
use typeinfo::{KeyType, TypeComparator, TypeInfo};
use typeinfo_runtime::sort::{NormalizedKeySorter, SortConfig};

#[derive(TypeInfo, Clone, Debug, PartialEq, Eq, Hash)]
enum Shape {
    Dot,
    Line(i32),
    Named { name: String, sides: u8 },
}

#[derive(TypeInfo, Clone, Debug, PartialEq, Eq, Hash)]
struct Account {
    region: String,
    id: i64,
    tag: Option<String>,
}

/// What a sort must produce: a stable sort by (comparator order, timestamp), the index of
/// arrival breaking ties.
fn reference<K: KeyType + Clone, V: Clone>(records: &[(K, i64, V)]) -> Vec<(K, i64, V)> {
    let comparator = K::comparator();
    let mut sorted = records.to_vec();
    sorted.sort_by(|a, b| comparator.compare(&a.0, &b.0).then(a.1.cmp(&b.1)));
    sorted
}

fn sort<K: KeyType, V: TypeInfo>(
    records: &[(K, i64, V)],
    config: SortConfig,
) -> (Vec<(K, i64, V)>, usize) {
    let mut sorter = NormalizedKeySorter::<K, V>::new(config).unwrap();
    for (k, ts, v) in records {
        sorter.add(k, *ts, v).unwrap();
    }
    let runs = sorter.spilled_runs();
    let out = sorter
        .finish()
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    (out, runs)
}

/// Sorted four ways (normalized keys on and off, in memory and spilled under a budget of
/// two 64-byte segments), each equal to the reference; keys equal by `Eq` form one group.
fn check<K, V>(records: Vec<(K, i64, V)>) -> Result<(), TestCaseError>
where
    K: KeyType + Clone + Debug + PartialEq,
    V: TypeInfo + Clone + Debug + PartialEq,
{
    let expected = reference(&records);
    for normalized in [true, false] {
        for spill in [false, true] {
            let mut config = SortConfig::default().normalized_keys(normalized);
            if spill {
                config = config.memory_budget(128).segment_bytes(64);
            }
            let (out, runs) = sort(&records, config);
            prop_assert_eq!(&out, &expected, "normalized {} spill {}", normalized, spill);
            // Every record takes at least 13 bytes (a 1-byte key, the 8-byte timestamp, a
            // 4-byte value): 16 of them cannot fit in two 64-byte segments (9 of the
            // smallest can: the bound was 8 before, and 9 one-byte keys fit).
            if spill && records.len() > 16 {
                prop_assert!(runs > 0, "a budget of 128 bytes spills");
            }
        }
    }
    // Groups: a key never comes back after another key came between.
    let mut seen: Vec<&K> = Vec::new();
    for (k, _, _) in &expected {
        if seen.last() != Some(&k) {
            prop_assert!(!seen.contains(&k), "{:?} in two groups", k);
            seen.push(k);
        }
    }
    Ok(())
}

/// Strings that share long prefixes (past the 16 bytes of a normalized-key prefix) and are
/// prefixes of each other.
fn strings() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ab]{0,3}",
        "[ab]{15,19}",
        ("aaaaaaaaaaaaaaaaaaaa", "[ab]{0,3}").prop_map(|(a, b)| a.to_owned() + &b),
        any::<String>(),
    ]
}

fn shapes() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Dot),
        any::<i32>().prop_map(Shape::Line),
        (strings(), any::<u8>()).prop_map(|(name, sides)| Shape::Named { name, sides }),
    ]
}

fn accounts() -> impl Strategy<Value = Account> {
    (strings(), -3i64..3, proptest::option::of(strings())).prop_map(|(region, id, tag)| Account {
        region,
        id,
        tag,
    })
}

fn records<K: Debug>(keys: impl Strategy<Value = K>) -> impl Strategy<Value = Vec<(K, i64, u32)>> {
    proptest::collection::vec((keys, -3i64..3, any::<u32>()), 0..120)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn string_keys(r in records(strings())) { check(r)?; }

    #[test]
    fn negative_and_positive_numbers(r in records(prop_oneof![any::<i64>(), -2i64..2])) { check(r)?; }

    #[test]
    fn options_and_tuples(r in records((proptest::option::of(strings()), -2i32..2))) { check(r)?; }

    #[test]
    fn derived_enums(r in records(shapes())) { check(r)?; }

    #[test]
    fn derived_structs(r in records(accounts())) { check(r)?; }

    #[test]
    fn byte_keys(r in records(proptest::collection::vec(any::<u8>(), 0..40))) { check(r)?; }
}

/// Many records with colliding prefixes under a small budget: many runs, the same output
/// as in memory.
#[test]
fn many_runs_merge_to_the_in_memory_order() {
    let records: Vec<(String, i64, u64)> = (0..20_000u64)
        .map(|i| {
            let key = format!("customer-with-a-long-name-{:04}", (i * 7919) % 1000);
            (key, ((i * 31) % 50) as i64, i)
        })
        .collect();
    let (in_memory, runs) = sort(&records, SortConfig::default());
    assert_eq!(runs, 0);
    assert_eq!(in_memory, reference(&records));
    let (spilled, runs) = sort(
        &records,
        SortConfig::default()
            .memory_budget(64 << 10)
            .segment_bytes(4 << 10),
    );
    assert!(runs >= 10, "{runs} runs");
    assert_eq!(spilled, in_memory);
}

/// A rewound read starts again at the first record, spilled runs and memory alike (batch
/// mode reruns a failed stage from its sorted input this way), however far the first read
/// went and even after an error-free end.
#[test]
fn a_rewound_read_gives_every_record_again() {
    let records: Vec<(String, i64, u64)> = (0..20_000u64)
        .map(|i| {
            (
                format!("key-{:03}", (i * 7919) % 300),
                ((i * 31) % 50) as i64,
                i,
            )
        })
        .collect();
    let expected = reference(&records);
    for budget in [None, Some(64usize << 10)] {
        let mut config = SortConfig::default();
        if let Some(bytes) = budget {
            config = config.memory_budget(bytes).segment_bytes(4 << 10);
        }
        let mut sorter = NormalizedKeySorter::<String, u64>::new(config).unwrap();
        for (k, ts, v) in &records {
            sorter.add(k, *ts, v).unwrap();
        }
        assert_eq!(sorter.spilled_runs() > 0, budget.is_some());
        let mut sorted = sorter.finish().unwrap();
        let part: Vec<_> = sorted.by_ref().take(7_777).map(Result::unwrap).collect();
        assert_eq!(part, expected[..7_777]);
        sorted.rewind().unwrap();
        let all: Vec<_> = sorted.by_ref().map(Result::unwrap).collect();
        assert_eq!(all, expected, "budget {budget:?}");
        sorted.rewind().unwrap();
        assert_eq!(sorted.map(Result::unwrap).collect::<Vec<_>>(), expected);
    }
}

/// Spill files have no names: the spill directory stays empty while runs exist and after.
#[test]
fn spill_files_never_outlive_the_sorter() {
    let dir = tempfile::tempdir().unwrap();
    let config = SortConfig::default()
        .memory_budget(4096)
        .segment_bytes(1024)
        .spill_dir(dir.path());
    let mut sorter = NormalizedKeySorter::<u64, String>::new(config).unwrap();
    for i in 0..5000u64 {
        sorter.add(&(i % 97), 0, &format!("value {i}")).unwrap();
    }
    assert!(sorter.spilled_runs() > 3);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let mut sorted = sorter.finish().unwrap();
    let first = sorted.next().unwrap().unwrap();
    assert_eq!((first.0, first.2.as_str()), (0, "value 0"));
    drop(sorted); // a cancelled read
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn byte_sized_keys_order_as_their_comparator_says() {
    // u8 keys around the sign boundary of i8 and at the top of u8 order as unsigned
    // numbers (a normalized key written as a signed byte would put 128 first).
    let records: Vec<(u8, i64, ())> = [255u8, 0, 128, 127, 1, 254]
        .iter()
        .map(|&k| (k, 0, ()))
        .collect();
    let (out, _) = sort(&records, SortConfig::default());
    let keys: Vec<u8> = out.iter().map(|r| r.0).collect();
    assert_eq!(keys, vec![0, 1, 127, 128, 254, 255]);
}

#[test]
fn bad_configuration_and_missing_spill_directory_are_clear_errors() {
    let err =
        NormalizedKeySorter::<u64, u64>::new(SortConfig::default().memory_budget(100)).unwrap_err();
    assert!(err.to_string().contains("below two segments"), "{err}");
    let err =
        NormalizedKeySorter::<u64, u64>::new(SortConfig::default().segment_bytes(8)).unwrap_err();
    assert!(err.to_string().contains("segment size"), "{err}");

    let missing = std::env::temp_dir().join("typeinfo-sorter-no-such-dir/inner");
    let config = SortConfig::default()
        .memory_budget(256)
        .segment_bytes(128)
        .spill_dir(&missing);
    let mut sorter = NormalizedKeySorter::<u64, u64>::new(config).unwrap();
    let mut failure = None;
    for i in 0..1000u64 {
        if let Err(e) = sorter.add(&i, 0, &i) {
            failure = Some(e);
            break;
        }
    }
    let err = failure.expect("spilling into a missing directory fails");
    assert!(
        err.to_string().contains("typeinfo-sorter-no-such-dir"),
        "names the directory: {err}"
    );
}

/// A record larger than a segment gets a segment of its own.
#[test]
fn records_larger_than_a_segment() {
    let records: Vec<(String, i64, String)> = (0..50)
        .map(|i| (format!("k{}", i % 5), i, "x".repeat(1000 + i as usize)))
        .collect();
    for budget in [1 << 20, 4096] {
        let (out, _) = sort(
            &records,
            SortConfig::default()
                .memory_budget(budget)
                .segment_bytes(256),
        );
        assert_eq!(out, reference(&records));
    }
}

/// Enough records for the radix passes (buckets of more than 64 entries), with keys that
/// share long prefixes, tie on 16 bytes, and are prefixes of each other.
#[test]
fn large_sorts_take_the_radix_path_and_agree_with_the_reference() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let records: Vec<(String, i64, u32)> = (0..60_000u32)
        .map(|i| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let key = match x % 4 {
                0 => format!("{:x}", x % 5000),
                1 => format!("shared-prefix-of-20-{:x}", x % 300),
                2 => "shared-prefix-of-20".to_owned(),
                _ => format!("{}", (x % 7) as u8 as char),
            };
            (key, (x % 5) as i64, i)
        })
        .collect();
    let expected = reference(&records);
    for config in [
        SortConfig::default(),
        SortConfig::default()
            .memory_budget(256 << 10)
            .segment_bytes(8 << 10),
    ] {
        let (out, _) = sort(&records, config);
        assert_eq!(out, expected);
    }
}

/// A sort larger than its memory budget spills, merges, and prints what the in-memory sort
/// prints, while the process's peak resident memory stays within the budget plus 16 MiB
/// (the program, its allocator and the readers' buffers), measured in a child process.
#[test]
fn a_sort_larger_than_its_budget_stays_within_it() {
    let run = |budget_mib: u64| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sort_records"))
            .args([
                "--records",
                "400000",
                "--budget-mib",
                &budget_mib.to_string(),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let field = |name: &str| -> String {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("no {name} in {text}"))
                .to_owned()
        };
        (
            field("runs").parse::<u64>().unwrap(),
            field("checksum"),
            field("peak_rss_kib").parse::<u64>().unwrap(),
        )
    };
    let (runs, checksum, peak_kib) = run(8);
    let (memory_runs, memory_checksum, _) = run(512);
    assert!(runs >= 3, "400,000 records spill under 8 MiB: {runs} runs");
    assert_eq!(memory_runs, 0);
    assert_eq!(checksum, memory_checksum, "the same order");
    assert!(
        peak_kib <= (8 + 16) * 1024,
        "peak {peak_kib} KiB over the 8 MiB budget + 16 MiB"
    );
}
