//! The runtime's bytes from outside: batches from another process (as timely hands them
//! over: length word, body, padding), operator parts and incremental keyed-state parts of
//! checkpoints, and `_metadata` with
//! what a restore reads after it (every operator's parts and keyed files).

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use tempfile::TempDir;

use typeinfo_runtime::__fuzz::{self, Element};

use crate::harness::{Outcome, Sub};
use crate::mutate::Nest;
use crate::targets::derived::{Event, Tree};
use crate::values::{Arb, Gen};

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl<T: Arb> Arb for Element<T> {
    fn arb(g: &mut Gen) -> Self {
        match g.rng.usize(..4) {
            0 => Element::Watermark {
                from: u32::arb(g),
                watermark: i64::arb(g),
            },
            1 => Element::Record {
                ts: i64::MIN,
                value: T::arb(g),
            },
            _ => Element::Record {
                ts: i64::arb(g),
                value: T::arb(g),
            },
        }
    }
}

/// Sets a batch's length word to the bytes after it.
#[allow(clippy::ptr_arg)] // the type of `Sub::seal`, which `_metadata` needs to grow
fn seal_batch(bytes: &mut Vec<u8>) {
    if bytes.len() >= 8 {
        let len = (bytes.len() - 8) as u64;
        bytes[..8].copy_from_slice(&len.to_le_bytes());
    }
}

fn batch_sub<T>(name: &str, g: &mut Gen, nests: Vec<Nest>) -> Sub
where
    T: typeinfo_runtime::Data + Arb + PartialEq + Debug,
{
    let seeds = (0..12)
        .map(|_| {
            let n = g.rng.usize(..12);
            __fuzz::batch_to_wire((0..n).map(|_| Element::<T>::arb(g)).collect())
        })
        .collect();
    Sub::new(name, seeds, |bytes| {
        match __fuzz::batch_from_wire::<T>(bytes) {
            Err(_) => Ok(Outcome::Error),
            Ok(elements) => {
                let wire = __fuzz::batch_to_wire(elements.clone());
                match __fuzz::batch_from_wire::<T>(&wire) {
                    // Equal, or (NaN in a record) the same bytes again.
                    Ok(back) if back == elements || __fuzz::batch_to_wire(back.clone()) == wire => {
                        Ok(Outcome::Value)
                    }
                    Ok(_) => Err("a re-encoded batch reads back as another batch".to_owned()),
                    Err((e, _)) => Err(format!("a re-encoded batch does not read back: {e}")),
                }
            }
        }
    })
    .nests(nests)
    .seal(seal_batch)
}

/// Recomputes an operator part's checksum (its last four bytes).
#[allow(clippy::ptr_arg)] // the type of `Sub::seal`, which `_metadata` needs to grow
fn seal_part(bytes: &mut Vec<u8>) {
    if let Some(body) = bytes.len().checked_sub(4) {
        let crc = crc32fast::hash(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_le_bytes());
    }
}

fn part_sub(g: &mut Gen, scratch: Arc<TempDir>) -> Result<Sub, String> {
    let dir = scratch.path().join("parts");
    let mut seeds = Vec::new();
    for i in 0..8 {
        let data = match i {
            0 => Vec::new(),
            // A source's part: stopped flag, records emitted, position.
            1 => {
                let mut d = vec![0];
                d.extend_from_slice(&42u64.to_le_bytes());
                d.push(8);
                d.extend_from_slice(&7u64.to_le_bytes());
                d
            }
            // Watermark assigner: highest timestamp and emitted watermark.
            2 => [i64::arb(g).to_le_bytes(), i64::arb(g).to_le_bytes()].concat(),
            _ => Vec::arb(g),
        };
        let path =
            __fuzz::write_operator_part(&dir.join("seeds"), i, i64::arb(g), data).map_err(err)?;
        seeds.push(std::fs::read(path).map_err(err)?);
    }
    let input = dir.join("input.ostate");
    let again = dir.join("again");
    Ok(Sub::new("operator part", seeds, move |bytes| {
        let _keep = &scratch;
        std::fs::write(&input, bytes).map_err(err)?;
        let Ok((watermark, data)) = __fuzz::read_operator_part(&input) else {
            return Ok(Outcome::Error);
        };
        let path = __fuzz::write_operator_part(&again, 0, watermark, data.clone())
            .map_err(|e| format!("a part that was read cannot be written: {e}"))?;
        match __fuzz::read_operator_part(&path) {
            Ok(back) if back == (watermark, data) => Ok(Outcome::Value),
            Ok(_) => Err("a re-written operator part reads back as another part".to_owned()),
            Err(e) => Err(format!(
                "a re-written operator part does not read back: {e}"
            )),
        }
    })
    .seal(seal_part))
}

/// Recomputes the checksum line of `_metadata` (its last line) over every byte before it.
fn seal_metadata(bytes: &mut Vec<u8>) {
    let trimmed = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let at = trimmed
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    bytes.truncate(at);
    let crc = crc32fast::hash(bytes);
    bytes.extend_from_slice(format!("crc32 {crc:08x}\n").as_bytes());
}

/// A checkpoint directory with two operators of two subtasks each (parts and keyed files).
fn write_checkpoint(
    chk: &Path,
    epoch: u64,
    operators: &[__fuzz::MetadataOperator],
) -> Result<(), String> {
    for (key, p, _) in operators {
        for s in 0..*p as usize {
            __fuzz::write_operator_part(&chk.join(key), s, -1, vec![1, 2, 3]).map_err(err)?;
            std::fs::write(chk.join(key).join(format!("subtask-{s}.kstate")), b"keyed")
                .map_err(err)?;
        }
    }
    std::fs::create_dir_all(chk).map_err(err)?;
    __fuzz::write_metadata(chk, epoch, 128, operators).map_err(err)
}

fn metadata_sub(scratch: Arc<TempDir>) -> Result<Sub, String> {
    let dir = scratch.path().join("metadata");
    let operators: Vec<__fuzz::MetadataOperator> = vec![
        ("uid-orders".to_owned(), 2, "Source: orders".to_owned()),
        (
            "node-3".to_owned(),
            2,
            "Window(TumblingEventTimeWindows(60000), EventTimeTrigger, count)".to_owned(),
        ),
        ("uid-sink".to_owned(), 1, "Sink: files".to_owned()),
    ];
    let chk = dir.join("chk-5");
    write_checkpoint(&chk, 5, &operators)?;
    let mut seeds = vec![std::fs::read(chk.join("_metadata")).map_err(err)?];
    let empty = dir.join("chk-empty");
    std::fs::create_dir_all(&empty).map_err(err)?;
    __fuzz::write_metadata(&empty, 0, 1, &[]).map_err(err)?;
    seeds.push(std::fs::read(empty.join("_metadata")).map_err(err)?);
    // Version 1 (before the checksum), which restores still read.
    seeds.push(b"typeinfo checkpoint v1\nepoch 5\nmax_parallelism 128\noperator uid-orders 2 Source: orders\noperator node-3 2 Window\n".to_vec());
    let again = dir.join("again");
    std::fs::create_dir_all(&again).map_err(err)?;
    Ok(Sub::new("_metadata", seeds, move |bytes| {
        let _keep = &scratch;
        std::fs::write(chk.join("_metadata"), bytes).map_err(err)?;
        let Ok((epoch, max_parallelism, ops)) = __fuzz::read_metadata(&chk) else {
            return Ok(Outcome::Error);
        };
        __fuzz::write_metadata(&again, epoch, max_parallelism, &ops)
            .map_err(|e| format!("metadata that was read cannot be written: {e}"))?;
        match __fuzz::read_metadata(&again) {
            Ok(back) if back == (epoch, max_parallelism, ops) => {}
            Ok(_) => return Err("re-written metadata reads back as other metadata".to_owned()),
            Err(e) => return Err(format!("re-written metadata does not read back: {e}")),
        }
        // What a restore reads next: every operator's parts and keyed files.
        match __fuzz::restore_inputs(&chk) {
            Ok(_) => Ok(Outcome::Value),
            Err(_) => Ok(Outcome::Error),
        }
    })
    .seal(seal_metadata))
}

/// Incremental keyed-state parts (`.native`): decoded, re-encoded, decoded to the same part.
fn native_part_sub(g: &mut Gen) -> Sub {
    let seeds = (0..8)
        .map(|i| {
            let private = (0..g.rng.usize(..4))
                .map(|j| (format!("MANIFEST-{j:06}"), Vec::<u8>::arb(g)))
                .collect();
            let shared = (0..i)
                .map(|j| {
                    (
                        format!("{j:06}.sst"),
                        format!("uid-op/{i}-0-{j:06}.sst"),
                        u64::arb(g),
                        u32::arb(g),
                    )
                })
                .collect();
            __fuzz::native_part_bytes(&__fuzz::native_part(private, shared, u64::arb(g)))
        })
        .collect();
    Sub::new("incremental part", seeds, |bytes| {
        let Ok(part) = __fuzz::read_native_part(bytes) else {
            return Ok(Outcome::Error);
        };
        match __fuzz::read_native_part(&__fuzz::native_part_bytes(&part)) {
            Ok(back) if back == part => Ok(Outcome::Value),
            Ok(_) => Err("a re-encoded incremental part reads back as another part".to_owned()),
            Err(e) => Err(format!(
                "a re-encoded incremental part does not read back: {e}"
            )),
        }
    })
    .seal(seal_part)
}

/// Builds the sub-targets.
pub fn build(g: &mut Gen) -> Result<Vec<Sub>, String> {
    let dir = Arc::new(crate::targets::scratch_dir()?);
    let mut leaf = vec![0];
    leaf.extend_from_slice(&7i64.to_le_bytes());
    // A deep tree inserted where a record's value is (the seal fixes the length word).
    let tree_nests = vec![Nest {
        open: vec![1],
        leaf: leaf.clone(),
        close: leaf,
    }];
    Ok(vec![
        batch_sub::<String>("batch of String", g, Vec::new()),
        batch_sub::<(u64, Vec<i32>)>("batch of (u64, Vec<i32>)", g, Vec::new()),
        batch_sub::<Event>("batch of Event", g, Vec::new()),
        batch_sub::<Tree>("batch of Tree", g, tree_nests),
        part_sub(g, Arc::clone(&dir))?,
        native_part_sub(g),
        metadata_sub(dir)?,
    ])
}
