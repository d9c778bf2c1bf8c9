//! `inspect`, `dump`, `verify` and the typed readers on a savepoint a real job wrote (the
//! main demo's job, stopped half-way), on both state backends; none of them changes a byte
//! of it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{backends, order, real_savepoint, tree, Total, ORDERS};
use typeinfo::TypeInfo;
use typeinfo_runtime::TimeWindow;
use typeinfo_savepoint::{dump, inspect, verify, Error, Savepoint};
use typeinfo_state::StateKind;

/// The accumulator evolved: the count widened, the total renamed, a field added.
#[derive(TypeInfo, Clone, Debug, Default, PartialEq)]
#[typeinfo(name = "test.Total")]
struct TotalV2 {
    orders: u64,
    #[typeinfo(alias = "cents")]
    revenue: i64,
    #[typeinfo(default)]
    coupons: u32,
}

/// What the open windows hold when the job stops after `ORDERS / 2` orders: the orders of
/// the minute of the last one (the earlier minutes have fired), summed per user.
fn open_windows() -> BTreeMap<String, (TimeWindow, Total)> {
    let last = order(ORDERS / 2 - 1).ts;
    let start = last - last % 60_000;
    let mut expected: BTreeMap<String, (TimeWindow, Total)> = BTreeMap::new();
    for o in (0..ORDERS / 2).map(order).filter(|o| o.ts >= start) {
        let e = expected.entry(o.user.clone()).or_insert((
            TimeWindow {
                start,
                end: start + 60_000,
            },
            Total::default(),
        ));
        e.1.orders += 1;
        e.1.cents += i64::from(o.amount);
    }
    expected
}

#[test]
fn a_real_savepoint_is_inspected_dumped_verified_and_read_as_types_on_both_backends() {
    let expected = open_windows();
    for state in backends() {
        let work = tempfile::tempdir().unwrap();
        let (dir, _) = real_savepoint(work.path(), state.clone());
        let before = tree(&dir);
        let savepoint = Savepoint::open(&dir).unwrap();

        // inspect: operators by uid, parallelism, states with kinds and types, sizes.
        let report = inspect(&savepoint).unwrap();
        let ops: Vec<(String, u32)> = report
            .operators
            .iter()
            .map(|o| (o.operator.key.clone(), o.operator.parallelism))
            .collect();
        assert_eq!(
            ops,
            [
                ("uid-minute-totals".to_owned(), 2),
                ("uid-orders".to_owned(), 1),
                ("uid-output".to_owned(), 2),
                ("uid-timestamps".to_owned(), 1)
            ],
            "{state:?}"
        );
        assert_eq!(report.max_parallelism, 128);
        let totals = report.operators[0].keyed.as_ref().expect("keyed state");
        assert_eq!(totals.key_type, "String");
        assert_eq!(totals.files.len(), 2);
        let contents = totals
            .states
            .iter()
            .find(|s| s.name == "window-contents")
            .expect("the window contents");
        assert_eq!(contents.kind, StateKind::Aggregating);
        assert!(!contents.ttl);
        assert_eq!(contents.namespace_type, "typeinfo.runtime.TimeWindow");
        assert_eq!(contents.value_types, ["test.Total"]);
        assert_eq!(contents.entries, expected.len() as u64);
        assert_eq!(
            contents.key_groups.values().map(|(n, _)| n).sum::<u64>(),
            contents.entries
        );
        assert_eq!(
            contents.key_groups.values().map(|(_, b)| b).sum::<u64>(),
            contents.bytes
        );
        assert!(report
            .operators
            .iter()
            .filter(|o| o.operator.key != "uid-minute-totals")
            .all(|o| o.keyed.is_none() && !o.parts.is_empty()));
        assert_eq!(
            report.types.get("test.Total").map(String::as_str),
            Some("test.Total { orders: u32, cents: i64 }")
        );
        let text = report.render(true);
        for needle in [
            "uid-minute-totals  \"Window\"  parallelism 2",
            "window-contents (aggregating): namespace typeinfo.runtime.TimeWindow, value test.Total",
            "subtask 1: key groups 64..=127",
            "        key group ",
            "typeinfo.runtime.TimeWindow { start: i64, end: i64 }",
        ] {
            assert!(text.contains(needle), "`{needle}` in\n{text}");
        }

        // dump: one JSON line per entry, read without the job's types.
        let mut out = Vec::new();
        let n = dump(&savepoint, "minute-totals", "window-contents", &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        assert_eq!(n, expected.len() as u64);
        assert_eq!(lines.len(), expected.len());
        lines.sort_by_key(|l| l.split("\"key\":").nth(1).map(str::to_owned));
        for (line, (user, (window, total))) in lines.iter().zip(&expected) {
            let tail = format!(
                ",\"key\":\"{user}\",\"namespace\":{{\"start\":{},\"end\":{}}},\"value\":{{\"orders\":{},\"cents\":{}}}}}",
                window.start, window.end, total.orders, total.cents
            );
            assert!(
                line.starts_with("{\"key_group\":") && line.ends_with(&tail),
                "{line} vs {tail}"
            );
        }

        // Typed: as stored, and migrated to an evolved accumulator.
        let mut typed: Vec<(String, TimeWindow, Total)> = savepoint
            .read_value_state("minute-totals", "window-contents")
            .unwrap();
        typed.sort_by(|a, b| a.0.cmp(&b.0));
        let as_expected: Vec<(String, TimeWindow, Total)> = expected
            .iter()
            .map(|(u, (w, t))| (u.clone(), *w, t.clone()))
            .collect();
        assert_eq!(typed, as_expected);
        let mut migrated: Vec<(String, TimeWindow, TotalV2)> = savepoint
            .read_value_state("uid-minute-totals", "window-contents")
            .unwrap();
        migrated.sort_by(|a, b| a.0.cmp(&b.0));
        for ((_, _, old), (_, _, new)) in typed.iter().zip(&migrated) {
            assert_eq!(
                (u64::from(old.orders), old.cents, 0),
                (new.orders, new.revenue, new.coupons)
            );
        }

        // Typed reads that cannot be: another kind, another type, no such state.
        let kind = savepoint
            .read_list_state::<String, TimeWindow, Total>("minute-totals", "window-contents");
        assert!(
            matches!(&kind, Err(Error::Refused(m)) if m.contains("read_value_state")),
            "{kind:?}"
        );
        let wrong = savepoint
            .read_value_state::<String, TimeWindow, String>("minute-totals", "window-contents");
        let message = wrong.map(|_| ()).unwrap_err().to_string();
        assert!(
            message.contains("window-contents") && message.contains("incompatible"),
            "{message}"
        );
        let missing = savepoint.read_value_state::<String, (), u64>("minute-totals", "nope");
        assert!(
            matches!(&missing, Err(Error::NotFound(m)) if m.contains("window-contents")),
            "{missing:?}"
        );
        let missing = savepoint.read_value_state::<String, (), u64>("nope", "count");
        assert!(
            matches!(&missing, Err(Error::NotFound(m)) if m.contains("uid-orders")),
            "{missing:?}"
        );

        // verify: every file and entry.
        let report = verify(&savepoint).unwrap();
        assert!(report.is_ok(), "{report}");
        assert_eq!(report.files, 9, "{report}");
        assert_eq!(report.entries, 2 * expected.len() as u64, "{report}");

        assert!(tree(&dir) == before, "a read changed the savepoint");
    }
}

/// A RocksDB job's checkpoints are incremental (RocksDB's own files): every command refuses
/// them, saying what to use instead, rather than calling them damaged; the whole savepoint
/// the same run wrote opens.
#[test]
fn an_incremental_checkpoint_is_refused_with_what_to_use_instead() {
    let work = tempfile::tempdir().unwrap();
    let (savepoint, _) = real_savepoint(work.path(), typeinfo_runtime::StateBackend::rocksdb());
    let checkpoints = work.path().join("checkpoints-output-v1-2");
    assert!(checkpoints.is_dir(), "the run's checkpoint directory");
    let err = Savepoint::open(&checkpoints).unwrap_err();
    assert!(matches!(err, Error::Refused(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("an incremental checkpoint") && message.contains("incremental(false)"),
        "{message}"
    );
    assert!(Savepoint::open(&savepoint).is_ok());
}
