//! A job made only of a user's own connectors and operator, written against the public API
//! as a user would: a partitioned source (splits, a position per split, idleness), an
//! operator that keeps operator state (the last sequence number of every split, in union
//! list state), and a two-phase sink (staged files committed by rename). The crash test
//! (`tests/connectors_recovery.rs`) kills it with SIGKILL and restarts it from its
//! checkpoints; its committed output must be exactly every record once with gap 1.
//!
//! ```text
//! connectors --records N --per-second R --parallelism P --output DIR
//!            [--checkpoint-dir DIR --checkpoint-interval-ms MS] [--restore PATH]
//!            [--pause-at SEQ --pause-ms MS] [--final-flush-ms MS]
//! ```
//!
//! Split 3 stops for `--pause-ms` (default 300) before record `--pause-at` (default half
//! way), so that it goes idle; a long pause near its end keeps the job running after the
//! other subtask's input has ended. `--final-flush-ms` makes sink subtask 0's last
//! staging (at the end of its input) take that long after its file is written, as a slow
//! upload would.
//!
//! Output: files `committed-<subtask>-<checkpoint>` in DIR, lines `split seq gap`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use typeinfo_runtime::{
    CheckpointConfig, Error, OneInputOperator, OperatorContext, ReadStatus, RestoreSettings,
    Result, RuntimeContext, Sink, SinkContext, SinkWriter, Source, SourceOutput, SplitReader,
    StateContext, StreamExecutionEnvironment, WatermarkStrategy,
};
use typeinfo_state::{OperatorListState, Redistribution};

const SPLITS: u32 = 4;

/// `SPLITS` partitions of `records` sequence numbers each, produced at `per_second` per split.
#[derive(Clone)]
struct Partitions {
    records: u64,
    per_second: u64,
    pause_at: u64,
    pause: Duration,
}

struct PartitionReader {
    split: u32,
    next: u64,
    records: u64,
    per_second: u64,
    pause_at: u64,
    pause: Duration,
    opened: Instant,
    /// Where the reader started (after a restore): pacing counts from there.
    started_at: u64,
    paused_since: Option<Instant>,
}

impl SplitReader<(u32, u64)> for PartitionReader {
    type Position = u64;

    fn read(
        &mut self,
        out: &mut SourceOutput<'_, (u32, u64)>,
        budget: usize,
    ) -> Result<ReadStatus> {
        if self.split == 3 && self.next == self.pause_at {
            let since = *self.paused_since.get_or_insert_with(Instant::now);
            if since.elapsed() < self.pause {
                return Ok(ReadStatus::NothingAvailable);
            }
        }
        let due =
            self.started_at + (self.opened.elapsed().as_secs_f64() * self.per_second as f64) as u64;
        let mut n = 0;
        while n < budget && self.next < self.records.min(due.max(self.started_at + 1)) {
            out.collect_with_timestamp((self.split, self.next), self.next as i64 * 10);
            self.next += 1;
            n += 1;
            if self.split == 3 && self.next == self.pause_at && self.paused_since.is_none() {
                break;
            }
        }
        Ok(if self.next >= self.records {
            ReadStatus::Finished
        } else if n == 0 {
            ReadStatus::NothingAvailable
        } else {
            ReadStatus::More
        })
    }

    fn position(&self) -> u64 {
        self.next
    }

    fn seek(&mut self, position: u64) -> Result<()> {
        self.next = position;
        self.started_at = position;
        Ok(())
    }
}

impl Source<(u32, u64)> for Partitions {
    type Split = u32;
    type Reader = PartitionReader;

    fn splits(&self, _parallelism: usize) -> Result<Vec<u32>> {
        Ok((0..SPLITS).collect())
    }

    fn reader(&self, split: &u32) -> Result<PartitionReader> {
        Ok(PartitionReader {
            split: *split,
            next: 0,
            records: self.records,
            per_second: self.per_second,
            pause_at: self.pause_at,
            pause: self.pause,
            opened: Instant::now(),
            started_at: 0,
            paused_since: None,
        })
    }
}

/// Emits `split seq gap` with the gap to the split's previous record; the last sequence
/// number of every split is operator state, so that a restore continues with gap 1.
#[derive(Clone, Default)]
struct GapCheck {
    last: BTreeMap<u32, u64>,
    state: Option<OperatorListState<(u32, u64)>>,
}

impl OneInputOperator<(), (u32, u64), String> for GapCheck {
    fn initialize_state(&mut self, ctx: &mut StateContext<'_, ()>) -> Result<()> {
        self.state = Some(
            ctx.operator_state()
                .list_state("last", Redistribution::Union)?,
        );
        Ok(())
    }

    fn open(&mut self, ctx: &mut StateContext<'_, ()>) -> Result<()> {
        if let Some(state) = self.state {
            for (split, seq) in state.get(ctx.operator_state())? {
                let last = self.last.entry(split).or_insert(seq);
                *last = (*last).max(seq);
            }
        }
        Ok(())
    }

    fn process_element(
        &mut self,
        (split, seq): (u32, u64),
        ctx: &mut OperatorContext<'_, (), String>,
    ) -> Result<()> {
        let gap = match self.last.insert(split, seq) {
            Some(before) => seq as i64 - before as i64,
            None => seq as i64 + 1,
        };
        ctx.collect(format!("{split} {seq} {gap}"));
        Ok(())
    }

    fn snapshot_state(&mut self, _checkpoint: u64, ctx: &mut StateContext<'_, ()>) -> Result<()> {
        if let Some(state) = self.state {
            state.update(
                ctx.operator_state(),
                self.last.iter().map(|(s, q)| (*s, *q)).collect(),
            )?;
        }
        Ok(())
    }
}

/// Stages each checkpoint's lines in `.staged-<subtask>-<checkpoint>` (written, synced) and
/// commits by renaming it to `committed-<subtask>-<checkpoint>`.
struct RenameSink {
    dir: PathBuf,
    /// How long subtask 0's last staging takes.
    final_flush: Duration,
}

struct RenameWriter {
    dir: PathBuf,
    subtask: usize,
    lines: String,
    final_flush: Duration,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.to_owned(),
        source: e,
    }
}

impl SinkWriter<String> for RenameWriter {
    type Committable = String;

    fn write(&mut self, line: String, _ctx: &SinkContext) -> Result<()> {
        self.lines.push_str(&line);
        self.lines.push('\n');
        Ok(())
    }

    fn prepare_commit(&mut self, checkpoint: u64) -> Result<Vec<String>> {
        // The last staging (`u64::MAX`, at the end of the input) always writes its file, so
        // that a test can see it begin.
        if self.lines.is_empty() && checkpoint != u64::MAX {
            return Ok(Vec::new());
        }
        let name = format!(".staged-{}-{checkpoint}", self.subtask);
        let path = self.dir.join(&name);
        let file = std::fs::File::create(&path).map_err(|e| io(&path, e))?;
        std::io::Write::write_all(&mut &file, self.lines.as_bytes()).map_err(|e| io(&path, e))?;
        file.sync_all().map_err(|e| io(&path, e))?;
        self.lines.clear();
        if checkpoint == u64::MAX && self.subtask == 0 {
            std::thread::sleep(self.final_flush);
        }
        Ok(vec![name])
    }
}

impl Sink<String> for RenameSink {
    type Writer = RenameWriter;
    type Committable = String;

    fn writer(&self, ctx: &RuntimeContext) -> Result<RenameWriter> {
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        Ok(RenameWriter {
            dir: self.dir.clone(),
            subtask: ctx.subtask_index(),
            lines: String::new(),
            final_flush: self.final_flush,
        })
    }

    fn commit(&self, staged: String) -> Result<()> {
        let Some(name) = staged.strip_prefix(".staged-").filter(|n| !n.contains('/')) else {
            return Err(Error::Corrupt(format!("not a staged file: {staged:?}")));
        };
        let to = self.dir.join(format!("committed-{name}"));
        match std::fs::rename(self.dir.join(&staged), &to) {
            Ok(()) => Ok(()),
            // Committed before the crash that this restore recovers from.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && to.exists() => Ok(()),
            Err(e) => Err(io(&to, e)),
        }
    }

    fn recover(&self) -> Result<()> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(".staged-") {
                std::fs::remove_file(entry.path()).map_err(|e| io(&entry.path(), e))?;
            }
        }
        Ok(())
    }
}

/// A job made only of a user's own connectors and operator (the crash test's program).
#[derive(clap::Parser)]
#[command(name = "connectors", about, long_about = None)]
struct Args {
    /// Sequence numbers per split.
    #[arg(long, default_value_t = 10_000)]
    records: u64,
    /// Records per second per split.
    #[arg(long, default_value_t = 20_000)]
    per_second: u64,
    /// Parallelism of every operator.
    #[arg(long, default_value_t = 2)]
    parallelism: u32,
    /// Where the sink commits its files.
    #[arg(long)]
    output: PathBuf,
    /// Checkpoints into this directory.
    #[arg(long)]
    checkpoint_dir: Option<PathBuf>,
    /// Checkpoint interval, in ms.
    #[arg(long, default_value_t = 100, requires = "checkpoint_dir")]
    checkpoint_interval_ms: u64,
    /// A checkpoint or savepoint to start from.
    #[arg(long)]
    restore: Option<PathBuf>,
    /// Split 3 pauses before this sequence number (default: half way).
    #[arg(long)]
    pause_at: Option<u64>,
    /// How long split 3 pauses, in ms.
    #[arg(long, default_value_t = 300)]
    pause_ms: u64,
    /// How long sink subtask 0's last staging takes after its file is written, in ms.
    #[arg(long, default_value_t = 0)]
    final_flush_ms: u64,
}

fn run(args: &Args) -> Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(args.parallelism);
    if let Some(dir) = &args.checkpoint_dir {
        let interval = Duration::from_millis(args.checkpoint_interval_ms);
        env.enable_checkpointing(CheckpointConfig::new(dir, interval));
    }
    if let Some(path) = &args.restore {
        env.restore_from(RestoreSettings {
            path: path.clone(),
            allow_non_restored_state: false,
        });
    }
    env.from_source(
        Partitions {
            records: args.records,
            per_second: args.per_second,
            pause_at: args.pause_at.unwrap_or(args.records / 2),
            pause: Duration::from_millis(args.pause_ms),
        },
        WatermarkStrategy::for_monotonous_timestamps().with_idleness(Duration::from_millis(50)),
        "Partitions",
    )
    .uid("partitions")
    .transform("Gap check", GapCheck::default())
    .uid("gap-check")
    .sink_to(RenameSink {
        dir: args.output.clone(),
        final_flush: Duration::from_millis(args.final_flush_ms),
    })
    .uid("rename-sink");
    env.execute("connectors")?;
    Ok(())
}

fn main() -> ExitCode {
    match run(&<Args as clap::Parser>::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("connectors: {e}");
            ExitCode::FAILURE
        }
    }
}
