//! Operator state: split and union redistribution at a new parallelism, broadcast state
//! with its read-only view, migration of element types, and bad files.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::path::PathBuf;

use typeinfo_state::*;

fn snapshot(dir: &std::path::Path, parallelism: u32) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for index in 0..parallelism {
        let mut ops = OperatorStateBackend::new(index, parallelism);
        let offsets = ops.list_state::<u32>("offsets", Redistribution::Split)?;
        let seen = ops.list_state::<String>("seen", Redistribution::Union)?;
        let rules = ops.broadcast_state::<String, i32>("rules")?;
        for j in 0..5 {
            offsets.add(&mut ops, index * 10 + j)?;
        }
        seen.add(&mut ops, format!("subtask-{index}"))?;
        rules.put(&mut ops, "limit".to_owned(), 100)?;
        rules.put(&mut ops, "burst".to_owned(), 7)?;
        let path = dir.join(format!("op-{index}.ostate"));
        ops.snapshot(&path)?;
        files.push(path);
    }
    Ok(files)
}

#[test]
fn split_lists_are_cut_and_union_lists_are_copied_at_a_new_parallelism() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let files = snapshot(dir.path(), 3)?;
    let paths: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
    let mut all_offsets = Vec::new();
    for index in 0..2 {
        let mut ops = OperatorStateBackend::new(index, 2);
        // Offsets widened from u32 to u64 on the way.
        let offsets = ops.list_state::<u64>("offsets", Redistribution::Split)?;
        let seen = ops.list_state::<String>("seen", Redistribution::Union)?;
        let rules = ops.broadcast_state::<String, i32>("rules")?;
        ops.restore(&paths)?;
        let mine = offsets.get(&mut ops)?;
        assert!(mine.len() == 7 || mine.len() == 8, "{mine:?}");
        all_offsets.extend(mine);
        assert_eq!(
            seen.get(&mut ops)?,
            vec!["subtask-0", "subtask-1", "subtask-2"]
        );
        let view = rules.read_only(&mut ops)?;
        assert_eq!(view.get(&"limit".to_owned()), Some(&100));
        assert_eq!(
            view.entries().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["burst", "limit"]
        );
    }
    all_offsets.sort_unstable();
    let expected: Vec<u64> = (0..3u64)
        .flat_map(|i| (0..5).map(move |j| i * 10 + j))
        .collect();
    assert_eq!(
        all_offsets, expected,
        "every element lands on exactly one subtask"
    );
    Ok(())
}

#[test]
fn bad_files_and_incompatible_types_are_refused() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let files = snapshot(dir.path(), 1)?;
    let mut bytes = std::fs::read(&files[0]).map_err(|e| Error::InvalidConfig(e.to_string()))?;
    bytes[10] ^= 1;
    let corrupt = dir.path().join("corrupt.ostate");
    std::fs::write(&corrupt, &bytes).map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let mut ops = OperatorStateBackend::new(0, 1);
    let offsets = ops.list_state::<u32>("offsets", Redistribution::Split)?;
    ops.list_state::<String>("seen", Redistribution::Union)?;
    ops.broadcast_state::<String, i32>("rules")?;
    assert!(matches!(
        ops.restore(&[corrupt.as_path()]),
        Err(Error::CorruptSavepoint { .. })
    ));
    assert!(offsets.get(&mut ops)?.is_empty());

    let mut ops = OperatorStateBackend::new(0, 1);
    ops.list_state::<String>("offsets", Redistribution::Split)?;
    ops.list_state::<String>("seen", Redistribution::Union)?;
    ops.broadcast_state::<String, i32>("rules")?;
    let err = ops
        .restore(&[files[0].as_path()])
        .expect_err("u32 -> String is incompatible");
    assert_eq!(
        err.to_string(),
        "state `offsets` cannot be restored: element u32 -> String: incompatible"
    );
    Ok(())
}

#[test]
fn broadcast_put_all_and_clear_survive_a_snapshot() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let mut ops = OperatorStateBackend::new(0, 1);
    let rules = ops.broadcast_state::<String, i32>("rules")?;
    let other = ops.broadcast_state::<String, i32>("other")?;
    rules.put(&mut ops, "limit".to_owned(), 1)?;
    rules.put_all(
        &mut ops,
        [
            ("limit".to_owned(), 100),
            ("burst".to_owned(), 7),
            ("burst".to_owned(), 8),
        ],
    )?;
    other.put_all(&mut ops, [("kept".to_owned(), 1)])?;
    let view = rules.read_only(&mut ops)?;
    assert_eq!(
        view.entries()
            .map(|(k, v)| (k.as_str(), *v))
            .collect::<Vec<_>>(),
        [("burst", 8), ("limit", 100)],
        "put_all overwrites, a later equal key wins"
    );
    let path = dir.path().join("op.ostate");
    ops.snapshot(&path)?;
    rules.clear(&mut ops)?;
    assert_eq!(rules.read_only(&mut ops)?.entries().count(), 0);
    assert_eq!(
        other.read_only(&mut ops)?.get(&"kept".to_owned()),
        Some(&1),
        "clear touches one state only"
    );
    let cleared = dir.path().join("cleared.ostate");
    ops.snapshot(&cleared)?;

    let mut restored = OperatorStateBackend::new(0, 1);
    let rules = restored.broadcast_state::<String, i32>("rules")?;
    restored.broadcast_state::<String, i32>("other")?;
    restored.restore(&[&path])?;
    assert_eq!(rules.read_only(&mut restored)?.entries().count(), 2);
    restored.restore(&[&cleared])?;
    assert_eq!(
        rules.read_only(&mut restored)?.entries().count(),
        0,
        "a cleared broadcast state restores empty"
    );
    Ok(())
}
