//! Native (incremental) checkpoints of the RocksDB backend: taken, restored at the same
//! parallelism (files opened directly), rescaled out and in (clipped by key-group range
//! deletions, copied in), into the heap backend and with migrated types (through the
//! savepoint format); an unchanged SST file keeps its name from one checkpoint to the next;
//! incomplete, corrupt and mismatched checkpoints are refused and leave the backend empty.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::collections::BTreeMap;
use std::path::Path;

use typeinfo_state::*;

const MAX: u32 = 128;
const KEYS: u64 = 400;

fn key(i: u64) -> String {
    format!("user-{i}")
}

struct States {
    count: ValueState<(), u32>,
    events: ListState<(), String>,
    tags: MapState<u64, String, i64>,
    total: ReducingState<(), u64>,
}

fn register<B: KeyedStateBackend<String>>(b: &mut B) -> States {
    States {
        count: b.value_state(&ValueStateDescriptor::new("count")).unwrap(),
        events: b.list_state(&ListStateDescriptor::new("events")).unwrap(),
        tags: b.map_state(&MapStateDescriptor::new("tags")).unwrap(),
        total: b
            .reducing_state(&ReducingStateDescriptor::new(
                "total",
                |a: &u64, b: &u64| a + b,
            ))
            .unwrap(),
    }
}

/// Writes round `round` of every key in `keys`.
fn write<B: KeyedStateBackend<String>>(
    b: &mut B,
    s: &States,
    keys: impl Iterator<Item = u64>,
    round: u32,
) {
    for i in keys {
        b.set_current_key(&key(i)).unwrap();
        s.count.update(b, &(), round * 1000 + i as u32).unwrap();
        s.events.add(b, &(), format!("e{round}-{i}")).unwrap();
        s.tags
            .put(b, &(i % 3), format!("t{}", i % 7), i as i64 * round as i64)
            .unwrap();
        s.total.add(b, &(), i).unwrap();
    }
}

type Seen = BTreeMap<String, (Option<u32>, Vec<String>, Vec<(String, i64)>, Option<u64>)>;

/// What every key in `keys` holds (keys outside the backend's range are skipped).
fn read<B: KeyedStateBackend<String>>(
    b: &mut B,
    s: &States,
    keys: impl Iterator<Item = u64>,
) -> Seen {
    let mut seen = BTreeMap::new();
    for i in keys {
        let k = key(i);
        if b.set_current_key(&k).is_err() {
            continue; // another backend's key group
        }
        seen.insert(
            k,
            (
                s.count.value(b, &()).unwrap(),
                s.events.get(b, &()).unwrap(),
                s.tags.entries(b, &(i % 3)).unwrap(),
                s.total.get(b, &()).unwrap(),
            ),
        );
    }
    seen
}

fn rocks(dir: &Path, range: KeyGroupRange) -> RocksDbKeyedStateBackend<String> {
    RocksDbKeyedStateBackend::open(
        dir,
        BackendOptions::new(MAX, range).unwrap(),
        RocksDbOptions::default().managed_memory_bytes(64 << 20),
    )
    .unwrap()
}

/// A backend of all key groups with two rounds written; its native checkpoint.
fn source(tmp: &Path) -> (Seen, NativeCheckpoint) {
    let mut b = rocks(&tmp.join("source"), KeyGroupRange::all(MAX));
    let s = register(&mut b);
    write(&mut b, &s, 0..KEYS, 1);
    write(&mut b, &s, (0..KEYS).step_by(3), 2);
    let seen = read(&mut b, &s, 0..KEYS);
    let cp = b.native_snapshot(&tmp.join("chk-1")).unwrap();
    (seen, cp)
}

#[test]
fn a_native_checkpoint_restores_at_the_same_parallelism() {
    let tmp = tempfile::tempdir().unwrap();
    let (seen, cp) = source(tmp.path());
    assert!(cp
        .files
        .iter()
        .any(|f| f.shared && f.name.ends_with(".sst")));
    assert!(cp.files.iter().any(|f| f.name == NATIVE_META && !f.shared));
    assert!(cp
        .files
        .iter()
        .any(|f| f.name.starts_with("MANIFEST") && !f.shared));

    let mut b = rocks(&tmp.path().join("restored"), KeyGroupRange::all(MAX));
    let s = register(&mut b);
    b.restore_native(&[cp.dir.as_path()]).unwrap();
    assert_eq!(read(&mut b, &s, 0..KEYS), seen);
    // The restored database keeps working (writes, another checkpoint, its restore).
    write(&mut b, &s, 0..10, 3);
    let again = read(&mut b, &s, 0..KEYS);
    let cp2 = b.native_snapshot(&tmp.path().join("chk-2")).unwrap();
    let mut c = rocks(&tmp.path().join("restored-twice"), KeyGroupRange::all(MAX));
    let s2 = register(&mut c);
    c.restore_native(&[cp2.dir.as_path()]).unwrap();
    assert_eq!(read(&mut c, &s2, 0..KEYS), again);
}

#[test]
fn unchanged_files_keep_their_names_so_checkpoints_are_incremental() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = rocks(&tmp.path().join("db"), KeyGroupRange::all(MAX));
    let s = register(&mut b);
    write(&mut b, &s, 0..5000, 1);
    let first = b.native_snapshot(&tmp.path().join("chk-1")).unwrap();
    write(&mut b, &s, (0..5000).step_by(100), 2); // 1% of the keys
    let second = b.native_snapshot(&tmp.path().join("chk-2")).unwrap();
    let old: BTreeMap<&str, u64> = first
        .files
        .iter()
        .filter(|f| f.shared)
        .map(|f| (f.name.as_str(), f.bytes))
        .collect();
    let new_bytes: u64 = second
        .files
        .iter()
        .filter(|f| !(f.shared && old.get(f.name.as_str()) == Some(&f.bytes)))
        .map(|f| f.bytes)
        .sum();
    assert!(
        second
            .files
            .iter()
            .any(|f| f.shared && old.contains_key(f.name.as_str())),
        "the second checkpoint lists files of the first"
    );
    assert!(
        new_bytes * 5 < second.bytes(),
        "{new_bytes} new bytes of {} after updating 1% of the keys",
        second.bytes()
    );
}

#[test]
fn rescaling_out_clips_and_in_copies() {
    let tmp = tempfile::tempdir().unwrap();
    let (seen, cp) = source(tmp.path());
    // Out: two subtasks, each opens the one checkpoint and deletes the other half.
    let halves = [
        KeyGroupRange::for_subtask(MAX, 2, 0).unwrap(),
        KeyGroupRange::for_subtask(MAX, 2, 1).unwrap(),
    ];
    let mut parts = Vec::new();
    let mut union = Seen::new();
    for (i, range) in halves.iter().enumerate() {
        let mut b = rocks(&tmp.path().join(format!("half-{i}")), *range);
        let s = register(&mut b);
        b.restore_native(&[cp.dir.as_path()]).unwrap();
        let got = read(&mut b, &s, 0..KEYS);
        assert!(!got.is_empty());
        // Nothing of the other half is left in the database (`keys` scans all of it).
        for id in [s.count.id(), s.events.id(), s.total.id()] {
            assert_eq!(b.keys(id, &()).unwrap().len(), got.len());
        }
        let tag_keys: usize = (0..3u64)
            .map(|ns| b.keys(s.tags.id(), &ns).unwrap().len())
            .sum();
        assert_eq!(tag_keys, got.len());
        union.extend(got);
        parts.push(
            b.native_snapshot(&tmp.path().join(format!("half-chk-{i}")))
                .unwrap(),
        );
    }
    assert_eq!(union, seen);
    // In: one subtask from both halves' checkpoints.
    let mut b = rocks(&tmp.path().join("whole"), KeyGroupRange::all(MAX));
    let s = register(&mut b);
    let dirs: Vec<&Path> = parts.iter().map(|p| p.dir.as_path()).collect();
    b.restore_native(&dirs).unwrap();
    assert_eq!(read(&mut b, &s, 0..KEYS), seen);
}

#[test]
fn the_heap_backend_restores_native_checkpoints_through_the_savepoint_format() {
    let tmp = tempfile::tempdir().unwrap();
    let (seen, cp) = source(tmp.path());
    for range in [
        KeyGroupRange::all(MAX),
        KeyGroupRange::for_subtask(MAX, 3, 1).unwrap(),
    ] {
        let mut b = KeyedBackend::<String>::heap(BackendOptions::new(MAX, range).unwrap()).unwrap();
        let s = register(&mut b);
        b.restore_native(&[cp.dir.as_path()]).unwrap();
        let got = read(&mut b, &s, 0..KEYS);
        let expected: Seen = seen
            .iter()
            .filter(|(k, _)| got.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, expected);
        let mut all =
            KeyedBackend::<String>::heap(BackendOptions::new(MAX, range).unwrap()).unwrap();
        let in_range = seen
            .keys()
            .filter(|k| all.set_current_key(k).is_ok())
            .count();
        assert_eq!(got.len(), in_range);
    }
}

#[test]
fn migrated_types_restore_through_the_savepoint_format() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = rocks(&tmp.path().join("v1"), KeyGroupRange::all(MAX));
    let v1 = b
        .value_state::<(), u32>(&ValueStateDescriptor::new("count"))
        .unwrap();
    for i in 0..50 {
        b.set_current_key(&key(i)).unwrap();
        v1.update(&mut b, &(), i as u32 * 10).unwrap();
    }
    let cp = b.native_snapshot(&tmp.path().join("chk")).unwrap();
    let mut b = rocks(&tmp.path().join("v2"), KeyGroupRange::all(MAX));
    let v2 = b
        .value_state::<(), u64>(&ValueStateDescriptor::new("count"))
        .unwrap();
    let report = b.restore_native(&[cp.dir.as_path()]).unwrap();
    assert!(
        report.migrated.iter().any(|m| m.starts_with("count")),
        "{report:?}"
    );
    for i in 0..50 {
        b.set_current_key(&key(i)).unwrap();
        assert_eq!(v2.value(&mut b, &()).unwrap(), Some(i * 10));
    }
}

#[test]
fn incomplete_corrupt_and_mismatched_checkpoints_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, cp) = source(tmp.path());
    let fresh = |name: &str, max: u32| {
        let mut b = RocksDbKeyedStateBackend::<String>::open(
            &tmp.path().join(name),
            BackendOptions::new(max, KeyGroupRange::all(max)).unwrap(),
            RocksDbOptions::default().managed_memory_bytes(64 << 20),
        )
        .unwrap();
        let s = register(&mut b);
        (b, s)
    };
    // No metadata: an incomplete checkpoint.
    let incomplete = tmp.path().join("incomplete");
    std::fs::create_dir(&incomplete).unwrap();
    for f in &cp.files {
        if f.name != NATIVE_META {
            std::fs::copy(cp.dir.join(&f.name), incomplete.join(&f.name)).unwrap();
        }
    }
    let (mut b, _) = fresh("a", MAX);
    let err = b.restore_native(&[incomplete.as_path()]).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    // Truncated metadata.
    let meta = std::fs::read(cp.dir.join(NATIVE_META)).unwrap();
    std::fs::write(incomplete.join(NATIVE_META), &meta[..meta.len() / 2]).unwrap();
    let err = b.restore_native(&[incomplete.as_path()]).unwrap_err();
    assert!(matches!(err, Error::CorruptSavepoint { .. }), "{err}");
    // Another max parallelism.
    let (mut b, _) = fresh("b", 256);
    let err = b.restore_native(&[cp.dir.as_path()]).unwrap_err();
    assert!(err.to_string().contains("max parallelism"), "{err}");
    // A stored state not registered today.
    let mut c = rocks(&tmp.path().join("c"), KeyGroupRange::all(MAX));
    c.value_state::<(), u32>(&ValueStateDescriptor::new("count"))
        .unwrap();
    let err = c.restore_native(&[cp.dir.as_path()]).unwrap_err();
    assert!(err.to_string().contains("not registered"), "{err}");
    // A backend that already holds state.
    let (mut d, s) = fresh("d", MAX);
    write(&mut d, &s, 0..3, 1);
    let err = d.restore_native(&[cp.dir.as_path()]).unwrap_err();
    assert!(err.to_string().contains("empty backend"), "{err}");
    // The checkpoint itself is untouched by all this: it still restores.
    let (mut e, s) = fresh("e", MAX);
    e.restore_native(&[cp.dir.as_path()]).unwrap();
    assert!(!read(&mut e, &s, 0..KEYS).is_empty());
}
