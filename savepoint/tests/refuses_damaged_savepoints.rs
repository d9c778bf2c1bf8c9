//! Every command refuses a damaged savepoint with a message naming the file: every byte of
//! every file flipped, every file truncated, a file replaced by random bytes or by another
//! kind of file, a file missing or left over, no savepoint at all. Nothing panics, no
//! output directory is left behind, and the input keeps every byte.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{real_savepoint, tree};
use typeinfo_runtime::StateBackend;
use typeinfo_savepoint::{dump, inspect, verify, Error, Savepoint, SavepointWriter};

/// Every file of the savepoint, relative to it.
fn files(dir: &Path) -> Vec<PathBuf> {
    tree(dir).into_keys().collect()
}

/// Runs every command on the damaged savepoint `dir` (whose file `damaged` is at fault)
/// and checks that each refuses it, naming the file, writes nothing, and changes nothing.
fn every_command_refuses(dir: &Path, damaged: &Path, case: &str) {
    let before = tree(dir);
    let scratch = tempfile::tempdir().unwrap();
    let name = damaged.file_name().unwrap().to_string_lossy().into_owned();
    let names_it = |message: &str| {
        assert!(
            message.contains(&name) || message.contains(&damaged.display().to_string()),
            "{case}: the message does not name `{name}`: {message}"
        );
    };
    match Savepoint::open(dir) {
        Err(e) => {
            assert!(name == "_metadata", "{case}: opening refused: {e}");
            names_it(&e.to_string());
        }
        Ok(savepoint) => {
            let inspected = inspect(&savepoint);
            let is_kstate = name.ends_with(".kstate");
            match inspected {
                Err(e) => names_it(&e.to_string()),
                // `inspect` shows what is there; a missing part is `verify`'s to report.
                Ok(_) => assert!(case.starts_with("missing"), "{case}: inspect accepted it"),
            }
            let report = verify(&savepoint).unwrap();
            assert!(!report.is_ok(), "{case}: verify found nothing");
            assert!(
                report.problems.iter().any(|p| p.contains(&name)),
                "{case}: {report}"
            );
            if is_kstate && !case.starts_with("missing") {
                let mut sink = Vec::new();
                let dumped = dump(&savepoint, "minute-totals", "window-contents", &mut sink);
                assert!(dumped.is_err(), "{case}: dump accepted it");
                names_it(&dumped.unwrap_err().to_string());
            }
            let out = scratch.path().join("out");
            let written = SavepointWriter::from_savepoint(savepoint.clone())
                .rename_uid("minute-totals", "totals")
                .unwrap()
                .write(&out);
            assert!(
                matches!(&written, Err(Error::Corrupt(_))),
                "{case}: {written:?}"
            );
            names_it(&written.unwrap_err().to_string());
            let rescaled = SavepointWriter::from_savepoint(savepoint)
                .set_max_parallelism(256)
                .unwrap()
                .write(&out);
            assert!(rescaled.is_err(), "{case}: set-max-parallelism accepted it");
            assert_eq!(
                std::fs::read_dir(scratch.path()).unwrap().count(),
                0,
                "{case}: a refused write left something behind"
            );
        }
    }
    assert!(tree(dir) == before, "{case}: the input changed");
}

#[test]
fn every_flipped_byte_of_every_file_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let (dir, _) = real_savepoint(work.path(), StateBackend::Heap);
    for file in files(&dir) {
        let path = dir.join(&file);
        let good = std::fs::read(&path).unwrap();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x5a;
            std::fs::write(&path, &bad).unwrap();
            every_command_refuses(&dir, &path, &format!("{} byte {i} flipped", file.display()));
        }
        std::fs::write(&path, &good).unwrap();
    }
}

#[test]
fn truncated_random_foreign_missing_and_stray_files_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let (dir, _) = real_savepoint(work.path(), StateBackend::rocksdb());
    let ops = dir.join("uid-minute-totals");
    for file in files(&dir) {
        let path = dir.join(&file);
        let good = std::fs::read(&path).unwrap();
        for len in [0, 1, good.len() / 2, good.len() - 1] {
            std::fs::write(&path, &good[..len]).unwrap();
            every_command_refuses(
                &dir,
                &path,
                &format!("{} truncated to {len}", file.display()),
            );
        }
        std::fs::write(&path, &good).unwrap();
    }

    let kstate = ops.join("subtask-1.kstate");
    let good = std::fs::read(&kstate).unwrap();
    let mut rng = common_rng(7);
    let random: Vec<u8> = (0..good.len()).map(|_| rng() as u8).collect();
    let foreign: [(&str, Vec<u8>); 4] = [
        ("random bytes", random),
        (
            "an operator part",
            std::fs::read(ops.join("subtask-1.ostate")).unwrap(),
        ),
        ("a png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec()),
        ("text", b"typeinfo checkpoint v2\nepoch 1\n".to_vec()),
    ];
    for (what, bytes) in &foreign {
        std::fs::write(&kstate, bytes).unwrap();
        every_command_refuses(
            &dir,
            &kstate,
            &format!("a keyed state file replaced by {what}"),
        );
    }
    // Another subtask's file in its place: sound bytes, the wrong key groups.
    std::fs::copy(ops.join("subtask-0.kstate"), &kstate).unwrap();
    let report = verify(&Savepoint::open(&dir).unwrap()).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("subtask-1.kstate") && p.contains("owns 64..=127")),
        "{report}"
    );
    std::fs::write(&kstate, &good).unwrap();

    let part = ops.join("subtask-1.ostate");
    std::fs::write(&part, &good).unwrap();
    every_command_refuses(
        &dir,
        &part,
        "an operator part replaced by a keyed state file",
    );
    std::fs::copy(ops.join("subtask-0.ostate"), &part).unwrap();

    std::fs::remove_file(&kstate).unwrap();
    every_command_refuses(&dir, &ops, "missing: subtask-1.kstate");
    std::fs::write(&kstate, &good).unwrap();

    let stray = ops.join(".subtask-1.kstate.tmp-42");
    std::fs::write(&stray, b"half a file").unwrap();
    every_command_refuses_to_copy(&dir, &stray);
    std::fs::remove_file(&stray).unwrap();
    let stray = dir.join("uid-gone");
    std::fs::create_dir(&stray).unwrap();
    let report = verify(&Savepoint::open(&dir).unwrap()).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("uid-gone") && p.contains("not an operator")),
        "{report}"
    );
    std::fs::remove_dir(&stray).unwrap();
    assert!(verify(&Savepoint::open(&dir).unwrap()).unwrap().is_ok());
}

/// A stray file: `verify` reports it, the writer refuses to carry it along.
fn every_command_refuses_to_copy(dir: &Path, stray: &Path) {
    let savepoint = Savepoint::open(dir).unwrap();
    let report = verify(&savepoint).unwrap();
    let name = stray.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        report.problems.iter().any(|p| p.contains(&name)),
        "{report}"
    );
    let scratch = tempfile::tempdir().unwrap();
    let written = SavepointWriter::from_savepoint(savepoint)
        .remove_operator("output")
        .unwrap()
        .write(&scratch.path().join("out"));
    assert!(
        matches!(&written, Err(Error::Corrupt(m)) if m.contains(&name)),
        "{written:?}"
    );
}

#[test]
fn no_savepoint_at_all_is_refused_with_a_clear_message() {
    let work = tempfile::tempdir().unwrap();
    let missing = Savepoint::open(&work.path().join("nowhere")).unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("no such checkpoint or savepoint"),
        "{missing}"
    );
    let file = work.path().join("a-file");
    std::fs::write(&file, b"hello").unwrap();
    let not_dir = Savepoint::open(&file).unwrap_err();
    assert!(
        not_dir.to_string().contains("not a savepoint directory"),
        "{not_dir}"
    );
    let empty = Savepoint::open(work.path()).unwrap_err();
    assert!(
        matches!(&empty, Error::NotFound(m) if m.contains("is not a savepoint")),
        "{empty}"
    );
    std::fs::write(work.path().join("_metadata"), b"\x00\x01garbage").unwrap();
    let garbage = Savepoint::open(work.path()).unwrap_err();
    assert!(
        matches!(&garbage, Error::Corrupt(m) if m.contains("_metadata")),
        "{garbage}"
    );
}

/// A small seeded generator (SplitMix64).
fn common_rng(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
