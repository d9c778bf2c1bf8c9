//! The upgrade story in one run: a job's keyed state written by version 1 of its types on
//! the heap at parallelism 2, savepointed, and restored by version 2 of the types into
//! RocksDB at parallelism 3, every value migrated; then an incompatible change refused.
//!
//! Run it with `./dev demo` (or `cargo run --release -p typeinfo-state --example upgrade`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use typeinfo_state::*;

const MAX_PARALLELISM: u32 = 128;

mod v1 {
    /// Per-user totals as version 1 of the job kept them.
    #[derive(typeinfo::TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Totals")]
    pub struct Totals {
        pub orders: u32,
        pub amount: f32,
        pub channel: String,
    }
}

mod v2 {
    /// Version 2: `orders` widened to `u64` and renamed `count`, `amount` widened to `f64`,
    /// `channel` dropped, `largest` added.
    #[derive(typeinfo::TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Totals")]
    pub struct Totals {
        #[typeinfo(alias = "orders")]
        pub count: u64,
        pub amount: f64,
        pub largest: Option<f64>,
    }
}

mod v3 {
    /// A change that cannot migrate: the amount became text.
    #[derive(typeinfo::TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Totals")]
    pub struct Totals {
        pub orders: u32,
        pub amount: String,
        pub channel: String,
    }
}

/// Deterministic orders: (user, minute, amount).
fn orders() -> Vec<(String, i64, f32)> {
    (0..2_000u32)
        .map(|i| {
            (
                format!("user-{:02}", (i * 7919) % 40),
                i64::from(i / 100),
                ((i * 37) % 500) as f32 / 4.0,
            )
        })
        .collect()
}

fn run_v1(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for subtask in 0..2 {
        let mut b = HeapKeyedStateBackend::<String>::new(BackendOptions::for_subtask(
            MAX_PARALLELISM,
            2,
            subtask,
        )?)?;
        let totals = b.value_state::<(), v1::Totals>(&ValueStateDescriptor::new("totals"))?;
        let per_minute = b.map_state::<(), i64, f32>(&MapStateDescriptor::new("per_minute"))?;
        for (user, minute, amount) in orders() {
            match b.set_current_key(&user) {
                Err(Error::KeyGroupOutOfRange { .. }) => continue, // another subtask's key
                other => other?,
            }
            let t = totals.value(&mut b, &())?.unwrap_or(v1::Totals {
                orders: 0,
                amount: 0.0,
                channel: "web".into(),
            });
            totals.update(
                &mut b,
                &(),
                v1::Totals {
                    orders: t.orders + 1,
                    amount: t.amount + amount,
                    ..t
                },
            )?;
            let m = per_minute.get(&mut b, &(), &minute)?.unwrap_or(0.0);
            per_minute.put(&mut b, &(), minute, m + amount)?;
        }
        let path = dir.join(format!("savepoint-{subtask}.kstate"));
        let written = b.snapshot(&path)?;
        println!(
            "v1 subtask {subtask}/2 (heap): {:?} -> {}",
            written.entries,
            path.display()
        );
        files.push(path);
    }
    Ok(files)
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let files = run_v1(dir.path())?;
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();

    // What version 1 computed, recomputed here to check the migrated state against: the
    // totals per user, and the amount per user and minute (summed in `f32` as version 1 did,
    // then widened to `f64` by the migration).
    let mut expected: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    let mut expected_per_minute: BTreeMap<String, BTreeMap<i64, f32>> = BTreeMap::new();
    for (user, minute, amount) in orders() {
        let e = expected.entry(user.clone()).or_default();
        e.0 += 1;
        e.1 = (e.1 as f32 + amount) as f64;
        *expected_per_minute
            .entry(user)
            .or_default()
            .entry(minute)
            .or_default() += amount;
    }

    let mut restored_users = 0;
    let mut all_match = true;
    let mut per_minute_match = true;
    for subtask in 0..3 {
        let options = BackendOptions::for_subtask(MAX_PARALLELISM, 3, subtask)?;
        let mut b = RocksDbKeyedStateBackend::<String>::open(
            &dir.path().join(format!("rocks-{subtask}")),
            options,
            RocksDbOptions::default(),
        )?;
        let totals = b.value_state::<(), v2::Totals>(&ValueStateDescriptor::new("totals"))?;
        let per_minute = b.map_state::<(), i64, f64>(&MapStateDescriptor::new("per_minute"))?;
        let report = b.restore(&paths)?;
        println!(
            "v2 subtask {subtask}/3 (RocksDB): restored {:?}, migrated {:?}",
            report.entries, report.migrated
        );
        for (user, (count, amount)) in &expected {
            match b.set_current_key(user) {
                Err(Error::KeyGroupOutOfRange { .. }) => continue,
                other => other?,
            }
            let t = totals.value(&mut b, &())?;
            all_match &= t
                == Some(v2::Totals {
                    count: *count,
                    amount: *amount,
                    largest: None,
                });
            let minutes: BTreeMap<i64, f64> =
                per_minute.entries(&mut b, &())?.into_iter().collect();
            let want: BTreeMap<i64, f64> = expected_per_minute
                .get(user)
                .map(|m| m.iter().map(|(k, v)| (*k, f64::from(*v))).collect())
                .unwrap_or_default();
            per_minute_match &= minutes == want;
            restored_users += 1;
        }
    }
    println!("{restored_users} users restored across 3 RocksDB subtasks; every total matches version 1: {all_match}; every per-minute amount (f32 -> f64) matches: {per_minute_match}");

    let mut b = HeapKeyedStateBackend::<String>::new(BackendOptions::new(
        MAX_PARALLELISM,
        KeyGroupRange::all(MAX_PARALLELISM),
    )?)?;
    b.value_state::<(), v3::Totals>(&ValueStateDescriptor::new("totals"))?;
    b.map_state::<(), i64, f32>(&MapStateDescriptor::new("per_minute"))?;
    match b.restore(&paths) {
        Err(e) => println!("an incompatible version 3 is refused before anything is written: {e}"),
        Ok(_) => {
            return Err("version 3 (amount: f32 -> String) was accepted; it must be refused".into())
        }
    }
    if !all_match || !per_minute_match || restored_users != expected.len() {
        return Err("the migrated state does not match what version 1 wrote".into());
    }
    Ok(())
}
