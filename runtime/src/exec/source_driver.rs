//! The driver of a source subtask: reads its splits in slices, stamps and batches the
//! records, emits watermarks and idleness, and closes checkpoint epochs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::checkpoint::format::{OperatorPart, METADATA_FILE};
use crate::checkpoint::storage::Storage;
use crate::checkpoint::store::{CheckpointStore, SourcePart};
use crate::config::StopWithSavepoint;
use crate::error::Result;
use crate::exec::driver::Next;
use crate::job::{Epoch, JobShared};
use crate::metrics::{Counter, MetricGroup};
use crate::operator::contract::{OperatorSetup, Output, SourceFunction};
use crate::operator::element::{sender_id, Msg};
use crate::types::Data;

/// Where a source driver's output goes.
pub(crate) trait SourceEmit<O> {
    /// Ships records (and watermarks) at the current epoch.
    fn ship(&mut self, msgs: &mut Vec<Msg<O>>);
    /// The current epoch.
    fn epoch(&self) -> Epoch;
    /// Closes the current epoch: the next records belong to `epoch`.
    fn advance(&mut self, epoch: Epoch);
}

/// Records a source emits per activation before it yields to the operators of its worker.
const SOURCE_SLICE_RECORDS: usize = 8 * 1024;

/// Time a source may take per activation (a source may block).
const SOURCE_SLICE_TIME: Duration = Duration::from_millis(1);

/// Records per call of the source function.
const SOURCE_CALL_BUDGET: usize = 64;

/// Records per shipped batch.
const SOURCE_BATCH: usize = 1024;

/// How soon a source that had nothing is asked again (it also checks its idleness then).
const SOURCE_POLL_INTERVAL: Duration = Duration::from_millis(2);

/// Runs a source function: emits a bounded slice of records per activation, closes an epoch
/// (writing its position into the checkpoint) every checkpoint interval or when a savepoint
/// is asked for, and, for a stop-with-savepoint, stops after its record budget and waits for
/// the savepoint to complete.
pub(crate) struct SourceDriver<O> {
    function: Box<dyn SourceFunction<O>>,
    output: Output<O>,
    emitted: u64,
    key: String,
    subtask: usize,
    job: Arc<JobShared>,
    checkpoints: Option<(CheckpointStore, Duration)>,
    next_checkpoint: Instant,
    stop: Option<StopWithSavepoint>,
    /// Where the stop-with-savepoint writes its savepoint.
    savepoint: Option<Storage>,
    stopped_at: Option<Epoch>,
    /// The last savepoint request this source acted on.
    seen_request: u64,
    records_out: Counter,
}

impl<O: Data> SourceDriver<O> {
    /// Makes the source function with `make` and moves it to its restored position.
    pub(crate) fn open(
        setup: &OperatorSetup,
        checkpoints: Option<(CheckpointStore, Duration)>,
        stop: Option<StopWithSavepoint>,
        make: impl FnOnce(&OperatorSetup) -> Result<Box<dyn SourceFunction<O>>>,
    ) -> Result<Self> {
        let mut function = make(setup)?;
        let mut emitted = 0;
        if let Some(restore) = &setup.restore {
            let parts = restore.parts(&setup.key)?;
            if let Some(part) = parts.get(setup.subtask) {
                let part = SourcePart::decode(&part.data)?;
                emitted = part.emitted;
                function.seek(&part.position)?;
            }
        }
        let savepoint = stop.as_ref().map(|s| Storage::open(&s.dir)).transpose()?;
        Ok(SourceDriver {
            function,
            output: Output::new(sender_id(setup.node, setup.subtask)),
            emitted,
            key: setup.key.clone(),
            subtask: setup.subtask,
            job: Arc::clone(&setup.job),
            next_checkpoint: Instant::now()
                + checkpoints.as_ref().map_or(Duration::MAX / 4, |(_, i)| *i),
            checkpoints,
            stop,
            savepoint,
            stopped_at: None,
            seen_request: 0,
            records_out: MetricGroup::new(
                &setup.name,
                setup.subtask,
                Arc::clone(&setup.job.metrics),
            )
            .counter("numRecordsOut"),
        })
    }

    /// This subtask's part of a checkpoint: its position after the records emitted so far.
    fn part(&self, stopped: bool) -> OperatorPart {
        let part = SourcePart {
            stopped,
            emitted: self.emitted,
            position: self.function.position(),
        };
        OperatorPart {
            watermark: i64::MIN,
            data: part.encode(),
        }
    }

    fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| self.emitted >= s.after_records)
    }

    /// One activation: a slice of records, then an epoch boundary if one is due.
    pub(crate) fn step(&mut self, emit: &mut impl SourceEmit<O>) -> Result<Next> {
        let mut more = true;
        let before = self.emitted;
        if !self.stopped() {
            more = self.emit_slice(emit)?;
        }
        let waiting = more && self.emitted == before && !self.stopped();
        if self.checkpoints.is_some() {
            self.maybe_close_epoch(emit, more)?;
        }
        if let Some(savepoint) = &self.savepoint {
            if self.stopped() && savepoint.exists(METADATA_FILE)? {
                // The savepoint is complete: end without a final watermark.
                more = false;
            }
        }
        Ok(match (more, self.stopped()) {
            (false, _) => Next::Finished,
            (true, true) => Next::Wait {
                wake: Some(Duration::from_millis(10)),
            },
            (true, false) if waiting => Next::Wait {
                wake: Some(SOURCE_POLL_INTERVAL),
            },
            (true, false) => Next::Now,
        })
    }

    /// Emits at most a slice of records (in small calls, shipped in batches as they are made,
    /// so that the operators sharing this worker run in between); `false` once exhausted
    /// (after the maximal watermark).
    fn emit_slice(&mut self, emit: &mut impl SourceEmit<O>) -> Result<bool> {
        let began = Instant::now();
        let mut made = 0;
        loop {
            let budget = self.stop.as_ref().map_or(SOURCE_CALL_BUDGET, |s| {
                (s.after_records - self.emitted).min(SOURCE_CALL_BUDGET as u64) as usize
            });
            let before = self.output.msgs.len();
            let more = self.function.run(&mut self.output, budget)?;
            let n = self.output.msgs.len() - before;
            self.emitted += n as u64;
            self.records_out.inc_by(n as u64);
            made += n;
            if !more {
                self.output.watermark(i64::MAX);
            }
            let stop_now = !more || self.stopped();
            // Nothing now from a source that is not finished: yield until it is asked again.
            let nothing = n == 0 && more;
            let out_of_time =
                nothing || made >= SOURCE_SLICE_RECORDS || began.elapsed() > SOURCE_SLICE_TIME;
            if self.output.msgs.len() >= SOURCE_BATCH || stop_now || out_of_time {
                emit.ship(&mut self.output.msgs);
            }
            if stop_now || out_of_time {
                return Ok(more);
            }
        }
    }

    /// Closes the current epoch when the interval passed, a savepoint was asked for, or the
    /// source just stopped for a savepoint: writes the position after this epoch's records.
    fn maybe_close_epoch(&mut self, emit: &mut impl SourceEmit<O>, more: bool) -> Result<()> {
        let Some((store, interval)) = &self.checkpoints else {
            return Ok(());
        };
        let epoch = emit.epoch();
        let asked = {
            let mut request = self.job.request();
            if request.dir.is_some() && request.id > self.seen_request {
                self.seen_request = request.id;
                request.after_epoch = Some(request.after_epoch.map_or(epoch, |e| e.max(epoch)));
                true
            } else {
                false
            }
        };
        let stopped = self.stopped();
        if !more {
            // The input ended: this subtask's part of this and every later checkpoint is its
            // end position (it emits nothing after this epoch, as a stopped source).
            return store.write_ended_source_part(epoch, &self.key, self.subtask, &self.part(true));
        }
        let stopping_now = stopped && self.stopped_at.is_none();
        if asked || Instant::now() >= self.next_checkpoint || stopping_now {
            store.write_part(epoch, &self.key, self.subtask, &self.part(stopped))?;
            emit.advance(epoch + 1);
            self.next_checkpoint = Instant::now() + *interval;
            if stopping_now {
                self.stopped_at = Some(epoch);
            }
        }
        Ok(())
    }
}
