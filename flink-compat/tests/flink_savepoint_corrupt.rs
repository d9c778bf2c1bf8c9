//! Damaged Flink savepoints: a truncated or byte-flipped `_metadata` or state file, a missing
//! file, a wrong magic number. Every one is an error that names the file, never a panic; a
//! seeded loop flips and cuts bytes of every golden savepoint's files.

use std::fs;
use std::path::{Path, PathBuf};

use typeinfo::Result;
use typeinfo_flink_compat::savepoint::{FlinkSavepoint, Metadata};

const NAMES: [&str; 4] = ["hashmap", "rocksdb", "hashmap_snappy", "rocksdb_snappy"];

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/savepoints")
        .join(name)
}

/// Copies a golden savepoint into a temporary directory.
fn copy(name: &str) -> std::io::Result<(tempfile::TempDir, PathBuf)> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join(name);
    fs::create_dir(&dir)?;
    for entry in fs::read_dir(golden(name))? {
        let entry = entry?;
        fs::copy(entry.path(), dir.join(entry.file_name()))?;
    }
    Ok((tmp, dir))
}

/// Opens and dumps; the error's text when it fails.
fn open_and_dump(dir: &Path) -> std::result::Result<(), String> {
    let savepoint = FlinkSavepoint::open(dir).map_err(|e| e.to_string())?;
    savepoint.dump().map(drop).map_err(|e| e.to_string())
}

fn state_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n != "_metadata"))
        .collect();
    files.sort();
    files
}

#[test]
fn wrong_magic_is_named() -> std::io::Result<()> {
    let (_tmp, dir) = copy("hashmap")?;
    let file = dir.join("_metadata");
    let mut bytes = fs::read(&file)?;
    bytes[0] ^= 0xff;
    fs::write(&file, &bytes)?;
    let err = open_and_dump(&dir).expect_err("a wrong magic number");
    assert!(
        err.contains("_metadata") && err.contains("not a Flink savepoint"),
        "{err}"
    );
    Ok(())
}

#[test]
fn truncated_metadata_is_an_error_at_every_length() -> std::io::Result<()> {
    let bytes = fs::read(golden("rocksdb").join("_metadata"))?;
    // Every cut before the properties is an error; the properties are kept as bytes.
    let properties = Metadata::read(&bytes)
        .map(|m| m.properties.len())
        .unwrap_or(0);
    for cut in 0..bytes.len() - properties {
        assert!(Metadata::read(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let (_tmp, dir) = copy("rocksdb")?;
    fs::write(dir.join("_metadata"), &bytes[..bytes.len() / 2])?;
    let err = open_and_dump(&dir).expect_err("truncated");
    assert!(err.contains("_metadata"), "{err}");
    Ok(())
}

#[test]
fn missing_and_truncated_state_files_are_named() -> std::io::Result<()> {
    for name in NAMES {
        for (i, file) in state_files(&golden(name)).iter().enumerate() {
            let (_tmp, dir) = copy(name)?;
            let target = dir.join(file.file_name().unwrap_or_default());
            let file_name = target
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            if i % 2 == 0 {
                fs::remove_file(&target)?;
            } else {
                let bytes = fs::read(&target)?;
                fs::write(&target, &bytes[..bytes.len() / 3])?;
            }
            let err = open_and_dump(&dir).expect_err("a damaged state file");
            assert!(err.contains(&file_name), "{name}: {err}");
        }
    }
    Ok(())
}

/// xorshift64*: the corruption loop's seeded generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn seeded_corruption_never_panics() -> Result<()> {
    let mut rng = Rng(0x5eed_f11c_0000_0031);
    let mut errors = 0;
    for round in 0..400 {
        let name = NAMES[round % NAMES.len()];
        let (_tmp, dir) = copy(name).map_err(typeinfo::Error::custom)?;
        let mut files = state_files(&dir);
        files.push(dir.join("_metadata"));
        let file = &files[rng.below(files.len())];
        let mut bytes = fs::read(file).map_err(typeinfo::Error::custom)?;
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len());
            match rng.below(3) {
                0 => bytes[at] ^= 1 << rng.below(8),
                1 => bytes[at] = rng.next() as u8,
                _ => bytes.truncate(at),
            }
            if bytes.is_empty() {
                break;
            }
        }
        fs::write(file, &bytes).map_err(typeinfo::Error::custom)?;
        if let Err(err) = open_and_dump(&dir) {
            // A damaged state file is named; a damaged `_metadata` may also show as a state
            // file that its offsets no longer fit, and that file is named.
            let file_name = file.file_name().unwrap_or_default().to_string_lossy();
            let named = if file_name == "_metadata" {
                err.contains(&*dir.to_string_lossy())
            } else {
                err.contains(&*file_name)
            };
            assert!(named, "round {round}: {err}");
            errors += 1;
        }
    }
    assert!(
        errors > 200,
        "only {errors} of 400 corruptions were noticed"
    );
    Ok(())
}
