//! Sorts generated records with the batch sorter and reports what it took.
//!
//! ```text
//! sort_records --records N [--budget-mib M] [--normalized-keys on|off] [--spill-dir DIR]
//! ```
//!
//! Record `i` has the key `customer-<16 hex digits of a hash of i>`, timestamp `hash % 1000`
//! and value `i`. Prints `records=`, `runs=` (spilled runs), `checksum=` (a hash of the sorted
//! output, in order: equal for equal orders, whatever the budget), the seconds spent adding,
//! sorting and reading, and `peak_rss_kib=` (the process's peak resident memory, from
//! `/proc/self/status`). Exits 1 when the output is out of order.

use std::time::Instant;

use typeinfo_runtime::sort::{NormalizedKeySorter, SortConfig};

/// Sorts generated records with the batch sorter and reports what it took.
#[derive(clap::Parser, Debug)]
#[command(name = "sort_records", about, long_about = None)]
struct Args {
    /// Records to sort.
    #[arg(long)]
    records: u64,
    /// The sorter's memory budget in MiB (beyond it, sorted runs spill).
    #[arg(long, default_value_t = 128)]
    budget_mib: usize,
    /// Compare by normalized key prefixes first.
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    normalized_keys: String,
    /// Where spilled runs go (default: the system's temporary directory).
    #[arg(long)]
    spill_dir: Option<std::path::PathBuf>,
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = <Args as clap::Parser>::parse();
    let (n, budget) = (args.records, args.budget_mib);
    let normalized = args.normalized_keys != "off";
    let mut config = SortConfig::default()
        .memory_budget(budget << 20)
        .normalized_keys(normalized);
    if let Some(dir) = args.spill_dir {
        config = config.spill_dir(dir);
    }
    let mut sorter = NormalizedKeySorter::<String, u64>::new(config)?;
    let start = Instant::now();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut key = String::with_capacity(32);
    for i in 0..n {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let h = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        key.clear();
        use std::fmt::Write as _;
        write!(key, "customer-{h:016x}")?;
        sorter.add(&key, (h % 1000) as i64, &i)?;
    }
    let added = start.elapsed();
    let runs = sorter.spilled_runs();
    let sorted = sorter.finish()?;
    let finished = start.elapsed();
    let mut checksum = 0xcbf2_9ce4_8422_2325u64;
    let mut previous: Option<(String, i64)> = None;
    let mut count = 0u64;
    for record in sorted {
        let (k, ts, v) = record?;
        if let Some((pk, pts)) = &previous {
            if (pk.as_str(), *pts) > (k.as_str(), ts) {
                eprintln!("out of order: {pk} {pts} before {k} {ts}");
                std::process::exit(1);
            }
        }
        checksum = (checksum ^ v).wrapping_mul(0x1000_0000_01b3);
        count += 1;
        previous = Some((k, ts));
    }
    let read = start.elapsed();
    if count != n {
        eprintln!("{count} records came out of {n}");
        std::process::exit(1);
    }
    println!("records={n}");
    println!("runs={runs}");
    println!("checksum={checksum:016x}");
    println!("add_s={:.3}", added.as_secs_f64());
    println!("sort_s={:.3}", (finished - added).as_secs_f64());
    println!("read_s={:.3}", (read - finished).as_secs_f64());
    println!("peak_rss_kib={}", peak_rss_kib());
    Ok(())
}
