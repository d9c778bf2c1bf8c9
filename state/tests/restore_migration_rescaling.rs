//! Savepoints across backends and parallelisms, with evolved value types; incompatible,
//! corrupt, truncated and foreign savepoints are refused and leave the target empty.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::{Path, PathBuf};

use typeinfo_state::*;

mod v1 {
    #[derive(typeinfo::TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub user: String,
        pub amount: f32,
        pub qty: i32,
        pub channel: String,
    }
}

mod v2 {
    /// `amount` widened, `qty` widened and renamed, `channel` removed, `note` added.
    #[derive(typeinfo::TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub user: String,
        pub amount: f64,
        #[typeinfo(alias = "qty")]
        pub quantity: i64,
        #[typeinfo(default)]
        pub note: String,
    }
}

mod v3 {
    /// `amount` became a string: incompatible.
    #[derive(typeinfo::TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Order")]
    pub struct Order {
        pub user: String,
        pub amount: String,
        pub qty: i32,
        pub channel: String,
    }
}

const MAX: u32 = 128;
const KEYS: u64 = 60;

fn key(i: u64) -> String {
    format!("user-{i}")
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

enum Kind {
    Heap,
    Rocks,
}

/// A backend of one subtask, boxed behind an enum so tests can pick the kind at run time.
enum AnyBackend {
    Heap(HeapKeyedStateBackend<String>),
    Rocks(RocksDbKeyedStateBackend<String>),
}

fn open(kind: &Kind, dir: &Path, parallelism: u32, index: u32) -> Result<AnyBackend> {
    let options = BackendOptions::for_subtask(MAX, parallelism, index)?;
    Ok(match kind {
        Kind::Heap => AnyBackend::Heap(HeapKeyedStateBackend::new(options)?),
        Kind::Rocks => AnyBackend::Rocks(RocksDbKeyedStateBackend::open(
            &dir.join(format!("db-{index}")),
            options,
            RocksDbOptions::default(),
        )?),
    })
}

macro_rules! with_backend {
    ($b:expr, |$x:ident| $body:expr) => {
        match $b {
            AnyBackend::Heap($x) => $body,
            AnyBackend::Rocks($x) => $body,
        }
    };
}

/// Writes v1 orders for every key this subtask owns into a value, a list and a map state.
fn write_v1<B: KeyedStateBackend<String>>(b: &mut B) -> Result<()> {
    let orders = b.value_state::<(), v1::Order>(&ValueStateDescriptor::new("last_order"))?;
    let history = b.list_state::<(), v1::Order>(&ListStateDescriptor::new("history"))?;
    let by_day = b.map_state::<(), u32, v1::Order>(&MapStateDescriptor::new("by_day"))?;
    for i in 0..KEYS {
        match b.set_current_key(&key(i)) {
            Err(Error::KeyGroupOutOfRange { .. }) => continue,
            other => other?,
        }
        let order = |n: u64| v1::Order {
            user: key(i),
            amount: n as f32 + 0.5,
            qty: -(n as i32),
            channel: "web".into(),
        };
        orders.update(b, &(), order(i))?;
        history.update(b, &(), vec![order(i), order(i + 1)])?;
        by_day.put(b, &(), 2, order(i + 2))?;
        by_day.put(b, &(), 1, order(i + 3))?;
    }
    Ok(())
}

fn v2_order(i: u64, n: u64) -> v2::Order {
    v2::Order {
        user: key(i),
        amount: n as f64 + 0.5,
        quantity: -(n as i64),
        note: String::new(),
    }
}

/// Registers the v2 states, restores `files`, and returns the keys it found with every
/// entry checked.
fn restore_v2<B: KeyedStateBackend<String>>(
    b: &mut B,
    files: &[&Path],
) -> Result<(RestoreReport, Vec<u64>)> {
    let orders = b.value_state::<(), v2::Order>(&ValueStateDescriptor::new("last_order"))?;
    let history = b.list_state::<(), v2::Order>(&ListStateDescriptor::new("history"))?;
    let by_day = b.map_state::<(), u32, v2::Order>(&MapStateDescriptor::new("by_day"))?;
    let report = b.restore(files)?;
    let mut found = Vec::new();
    for i in 0..KEYS {
        match b.set_current_key(&key(i)) {
            Err(Error::KeyGroupOutOfRange { .. }) => continue,
            other => other?,
        }
        assert_eq!(orders.value(b, &())?, Some(v2_order(i, i)), "{}", key(i));
        assert_eq!(
            history.get(b, &())?,
            vec![v2_order(i, i), v2_order(i, i + 1)]
        );
        assert_eq!(
            by_day.entries(b, &())?,
            vec![(1, v2_order(i, i + 3)), (2, v2_order(i, i + 2))]
        );
        found.push(i);
    }
    Ok((report, found))
}

fn snapshot_all(kind: &Kind, dir: &Path, parallelism: u32) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for index in 0..parallelism {
        let mut b = open(kind, &dir.join("write"), parallelism, index)?;
        let path = dir.join(format!("part-{index}.kstate"));
        with_backend!(&mut b, |x| {
            write_v1(x)?;
            x.snapshot(&path)?;
        });
        files.push(path);
    }
    Ok(files)
}

fn restore_all(kind: &Kind, dir: &Path, parallelism: u32, files: &[PathBuf]) -> Result<Vec<u64>> {
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let mut all = Vec::new();
    for index in 0..parallelism {
        let mut b = open(kind, &dir.join("read"), parallelism, index)?;
        let (report, found) = with_backend!(&mut b, |x| restore_v2(x, &paths)?);
        assert!(
            report.migrated.contains(&"last_order.value".to_owned()),
            "{report:?}"
        );
        assert!(
            report.migrated.contains(&"by_day.user value".to_owned()),
            "{report:?}"
        );
        all.extend(found);
    }
    all.sort_unstable();
    Ok(all)
}

#[test]
fn heap_at_two_restores_into_rocksdb_at_three_with_migration() -> Result<()> {
    let dir = tmp();
    let files = snapshot_all(&Kind::Heap, dir.path(), 2)?;
    assert_eq!(
        restore_all(&Kind::Rocks, dir.path(), 3, &files)?,
        (0..KEYS).collect::<Vec<_>>()
    );
    Ok(())
}

#[test]
fn rocksdb_at_three_restores_into_heap_at_one_with_migration() -> Result<()> {
    let dir = tmp();
    let files = snapshot_all(&Kind::Rocks, dir.path(), 3)?;
    assert_eq!(
        restore_all(&Kind::Heap, dir.path(), 1, &files)?,
        (0..KEYS).collect::<Vec<_>>()
    );
    Ok(())
}

#[test]
fn the_same_backend_at_the_same_parallelism_restores_as_is() -> Result<()> {
    for kind in [Kind::Heap, Kind::Rocks] {
        let dir = tmp();
        let files = snapshot_all(&kind, dir.path(), 1)?;
        let mut b = open(&kind, &dir.path().join("again"), 1, 0)?;
        with_backend!(&mut b, |x| {
            x.value_state::<(), v1::Order>(&ValueStateDescriptor::new("last_order"))?;
            x.list_state::<(), v1::Order>(&ListStateDescriptor::new("history"))?;
            x.map_state::<(), u32, v1::Order>(&MapStateDescriptor::new("by_day"))?;
            let report = x.restore(&[files[0].as_path()])?;
            assert!(report.migrated.is_empty(), "{report:?}");
            assert_eq!(report.entries.get("last_order"), Some(&KEYS));
        });
    }
    Ok(())
}

/// Whether a backend holds any state at all.
fn is_empty<B: KeyedStateBackend<String>>(b: &mut B) -> Result<bool> {
    let orders = b.value_state::<(), v3::Order>(&ValueStateDescriptor::new("last_order"))?;
    Ok(b.keys(orders.id(), &())?.is_empty())
}

#[test]
fn an_incompatible_type_is_refused_before_anything_is_written() -> Result<()> {
    for kind in [Kind::Heap, Kind::Rocks] {
        let dir = tmp();
        let files = snapshot_all(&Kind::Heap, dir.path(), 1)?;
        let mut b = open(&kind, &dir.path().join("read"), 1, 0)?;
        with_backend!(&mut b, |x| {
            x.value_state::<(), v3::Order>(&ValueStateDescriptor::new("last_order"))?;
            x.list_state::<(), v1::Order>(&ListStateDescriptor::new("history"))?;
            x.map_state::<(), u32, v1::Order>(&MapStateDescriptor::new("by_day"))?;
            let err = x
                .restore(&[files[0].as_path()])
                .expect_err("an incompatible type must be refused");
            assert_eq!(err.to_string(), "state `last_order` cannot be restored: value Order.amount: f32 -> String: incompatible");
            assert!(is_empty(x)?);
        });
    }
    Ok(())
}

#[test]
fn corrupt_truncated_foreign_and_missing_files_are_refused_and_left_untouched() -> Result<()> {
    let dir = tmp();
    let files = snapshot_all(&Kind::Heap, dir.path(), 1)?;
    let good = std::fs::read(&files[0]).map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() / 2].to_vec()),
        ("one byte short", good[..good.len() - 1].to_vec()),
        ("foreign", b"name,amount\nada,12\n".to_vec()),
        ("empty", Vec::new()),
    ];
    let mut flipped = good.clone();
    flipped[good.len() / 3] ^= 0x40;
    cases.push(("flipped byte", flipped));
    for kind in [Kind::Heap, Kind::Rocks] {
        for (name, bytes) in &cases {
            let path = dir.path().join(format!("{name}.kstate"));
            std::fs::write(&path, bytes).map_err(|e| Error::InvalidConfig(e.to_string()))?;
            let mut b = open(&kind, &dir.path().join(format!("read-{name}")), 1, 0)?;
            with_backend!(&mut b, |x| {
                x.value_state::<(), v1::Order>(&ValueStateDescriptor::new("last_order"))?;
                x.list_state::<(), v1::Order>(&ListStateDescriptor::new("history"))?;
                x.map_state::<(), u32, v1::Order>(&MapStateDescriptor::new("by_day"))?;
                let err = x
                    .restore(&[path.as_path()])
                    .expect_err("a bad file must be refused");
                assert!(
                    matches!(err, Error::CorruptSavepoint { .. }),
                    "{name}: {err}"
                );
                let orders =
                    x.value_state::<(), v1::Order>(&ValueStateDescriptor::new("last_order"))?;
                assert!(
                    x.keys(orders.id(), &())?.is_empty(),
                    "{name}: the target must stay empty"
                );
            });
            assert_eq!(
                &std::fs::read(&path).map_err(|e| Error::InvalidConfig(e.to_string()))?,
                bytes,
                "{name}: the file is untouched"
            );
        }
        let mut b = open(&kind, &dir.path().join("read-missing"), 1, 0)?;
        with_backend!(&mut b, |x| {
            let err = x
                .restore(&[dir.path().join("nope.kstate").as_path()])
                .expect_err("a missing file must be refused");
            assert!(matches!(err, Error::Io { .. }), "{err}");
        });
    }
    Ok(())
}

#[test]
fn a_snapshot_replaces_the_previous_file_atomically() -> Result<()> {
    let dir = tmp();
    let path = dir.path().join("state.kstate");
    let mut b =
        HeapKeyedStateBackend::<String>::new(BackendOptions::new(MAX, KeyGroupRange::all(MAX))?)?;
    write_v1(&mut b)?;
    b.snapshot(&path)?;
    b.snapshot(&path)?;
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .map_err(|e| Error::InvalidConfig(e.to_string()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file is left behind");
    Ok(())
}

#[test]
fn unregistered_stored_states_are_named() -> Result<()> {
    let dir = tmp();
    let files = snapshot_all(&Kind::Heap, dir.path(), 1)?;
    let mut b =
        HeapKeyedStateBackend::<String>::new(BackendOptions::new(MAX, KeyGroupRange::all(MAX))?)?;
    b.value_state::<(), v1::Order>(&ValueStateDescriptor::new("last_order"))?;
    let err = b
        .restore(&[files[0].as_path()])
        .expect_err("unregistered states must be refused");
    assert!(err.to_string().contains("`history`"), "{err}");
    Ok(())
}

#[test]
fn rocksdb_refuses_a_directory_it_does_not_own() -> Result<()> {
    let dir = tmp();
    std::fs::write(dir.path().join("precious.txt"), b"keep me")
        .map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let err = RocksDbKeyedStateBackend::<String>::open(
        dir.path(),
        BackendOptions::new(MAX, KeyGroupRange::all(MAX))?,
        RocksDbOptions::default(),
    )
    .expect_err("a foreign directory must be refused");
    assert!(matches!(err, Error::InvalidConfig(_)), "{err}");
    assert!(dir.path().join("precious.txt").exists());
    Ok(())
}
