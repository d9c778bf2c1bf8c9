//! The driver of a source subtask: reads its splits in slices, stamps and batches the
//! records, emits watermarks and idleness, closes checkpoint epochs, and holds back while
//! too much of what it emitted is still in flight.
//!
//! # Flow control
//!
//! Timely dataflow has no flow control of its own: a source that runs ahead of its
//! consumers fills the channels between them (and, across processes, the network buffers)
//! until memory runs out. Sources here bound what they have emitted and the job has not
//! finished with, as Flink's credit-based flow control bounds the buffers of a channel, by
//! the timely frontier:
//!
//! - every record carries a [`Time`]: its checkpoint epoch and a *tick*, the wall clock in
//!   milliseconds when its source emitted it (a source moves its capability to the current
//!   tick at every activation, so a source with nothing to emit does not hold the frontier
//!   back);
//! - every operator downstream of a source gives up its capabilities up to its input
//!   frontier as soon as it has processed what came before it, so the frontier of every
//!   operator reachable from a source (read through a timely probe) says which of the
//!   source's ticks are done with: nothing before the frontier is still in a channel, a
//!   stash or an operator's input;
//! - the source remembers how many records it had emitted when each of its ticks began, so
//!   the records it emitted at or after the frontier are an upper bound of its records in
//!   flight; while they reach the job's budget
//!   ([`ExecutionConfig::max_in_flight_records`](crate::config::ExecutionConfig::max_in_flight_records),
//!   per source subtask), the source emits nothing and counts the time as back-pressured.
//!
//! The bound is in records, not bytes: a typed record's size in memory is not known without
//! serializing it, and a budget in records bounds memory wherever records have a bounded
//! size. Records an operator makes out of one input record (a flat map) are in flight as long
//! as their input, so they count against nothing: the bound holds up to the operators' fan-out.
//! The same bound works across processes (the frontier is global), holds around checkpoint
//! barriers (records of a later epoch are at or after the frontier until the earlier epoch is
//! done, so a source that runs into the next epoch waits for alignment, as Flink's do) and
//! around two-input operators (their frontier is the least of both inputs). A source
//! waiting for its budget still closes its epochs, so checkpoints go on under back-pressure.
//! Ticks come from each process's wall clock, raised to the highest tick a process has
//! received from another, so clocks that differ across hosts make the budget count a little
//! more than what is in flight, never less.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::checkpoint::format::{OperatorPart, METADATA_FILE};
use crate::checkpoint::storage::Storage;
use crate::checkpoint::store::{CheckpointStore, SourcePart};
use crate::config::StopWithSavepoint;
use crate::error::Result;
use crate::exec::driver::Next;
use crate::job::{epoch_of, tick_of, time_at, Epoch, JobShared, Time};
use crate::metrics::{MetricGroup, SubtaskCounter, TimeShares};
use crate::operator::contract::{OperatorSetup, Output, SideRecord, SourceFunction};
use crate::operator::element::{sender_id, Msg};
use crate::types::Data;

/// Where a source driver's output goes.
pub(crate) trait SourceEmit<O> {
    /// Ships records (and watermarks) at the current time.
    fn ship(&mut self, msgs: &mut Vec<Msg<O>>);
    /// Sends records of tagged side outputs (and their watermarks) at the current time.
    fn ship_tagged(&mut self, msgs: &mut Vec<Msg<SideRecord>>);
    /// The current time (its epoch is the current epoch).
    fn time(&self) -> Time;
    /// Moves to `time`: the next records are stamped with it.
    fn advance(&mut self, time: Time);
    /// The least time any operator downstream of this source may still hold records of
    /// (`None`: nothing is in flight anywhere downstream).
    fn frontier(&self) -> Option<Time>;
}

/// How long a source that has reached its in-flight budget waits before it looks again.
const BACKPRESSURE_WAIT: Duration = Duration::from_micros(500);

/// How many records a source subtask had emitted when each of its times began, for the
/// times the frontier has not passed: what it emitted at or after the frontier is in flight.
pub(crate) struct FlightLog {
    /// (time, records emitted before it), in time order.
    starts: VecDeque<(Time, u64)>,
    budget: u64,
}

impl FlightLog {
    pub(crate) fn new(budget: u64) -> Self {
        FlightLog {
            starts: VecDeque::new(),
            budget: budget.max(1),
        }
    }

    /// The source moved to `time` after emitting `emitted` records.
    pub(crate) fn began(&mut self, time: Time, emitted: u64) {
        if self.starts.back().is_some_and(|(t, _)| *t >= time) {
            return;
        }
        self.starts.push_back((time, emitted));
    }

    /// The records emitted at or after `frontier` (an upper bound of those still in flight),
    /// forgetting the times before it (the frontier never goes back).
    pub(crate) fn in_flight(&mut self, frontier: Option<Time>, emitted: u64) -> u64 {
        let Some(frontier) = frontier else {
            self.starts.clear();
            return 0;
        };
        while self.starts.front().is_some_and(|(t, _)| *t < frontier) {
            self.starts.pop_front();
        }
        self.starts
            .front()
            .map_or(0, |(_, before)| emitted.saturating_sub(*before))
    }

    /// Whether the records in flight reach the budget.
    pub(crate) fn full(&mut self, frontier: Option<Time>, emitted: u64) -> bool {
        self.in_flight(frontier, emitted) >= self.budget
    }
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
    /// Records of tagged side outputs, with a copy of every watermark and idleness mark.
    tagged: Output<SideRecord>,
    emitted: u64,
    key: String,
    /// The operator's name (for errors and metrics).
    name: String,
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
    records_out: SubtaskCounter,
    /// What this subtask emitted that may still be in flight (flow control).
    flight: FlightLog,
    /// Busy, back-pressured and idle time per second.
    shares: TimeShares,
    /// The newest completed checkpoint the source function was told of.
    told: Option<Epoch>,
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
            if parts.len() == setup.parallelism && !function.restores_by_split_id() {
                if let Some(part) = parts.get(setup.subtask) {
                    let part = SourcePart::decode(&part.data)?;
                    emitted = part.emitted;
                    function.seek(&part.position)?;
                }
            } else {
                // Restored at another parallelism (a rescalable source), or by split names:
                // every old subtask's part may hold splits this subtask reads now. Its count
                // of records emitted starts again at another parallelism.
                for (i, part) in parts.iter().enumerate() {
                    let part = SourcePart::decode(&part.data)?;
                    if parts.len() == setup.parallelism && i == setup.subtask {
                        emitted = part.emitted;
                    }
                    function.seek_rescaled(&part.position)?;
                }
            }
            if !parts.is_empty() {
                function.restored()?;
            }
        }
        let savepoint = stop.as_ref().map(|s| Storage::open(&s.dir)).transpose()?;
        let group = MetricGroup::new(&setup.name, setup.subtask, Arc::clone(&setup.job.metrics));
        Ok(SourceDriver {
            function,
            output: Output::new(sender_id(setup.node, setup.subtask)),
            tagged: Output::new(sender_id(setup.node, setup.subtask)),
            emitted,
            key: setup.key.clone(),
            name: setup.name.clone(),
            subtask: setup.subtask,
            job: Arc::clone(&setup.job),
            next_checkpoint: Instant::now()
                + checkpoints.as_ref().map_or(Duration::MAX / 4, |(_, i)| *i),
            checkpoints,
            stop,
            savepoint,
            stopped_at: None,
            seen_request: 0,
            records_out: group.subtask_counter("numRecordsOut"),
            flight: FlightLog::new(setup.max_in_flight_records),
            shares: TimeShares::new(&group),
            told: setup.job.completed_checkpoint(),
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

    /// A stop with a savepoint asked for while the job runs (see [`crate::exec::signal`]):
    /// this source stops where it is, as a [`StopWithSavepoint`] whose budget it has used.
    fn adopt_stop_request(&mut self) -> Result<()> {
        if self.stop.is_some() || self.checkpoints.is_none() {
            return Ok(());
        }
        if let Some(dir) = self.job.stop_requested() {
            self.savepoint = Some(Storage::open(&dir)?);
            self.stop = Some(StopWithSavepoint {
                after_records: self.emitted,
                dir,
            });
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| self.emitted >= s.after_records)
    }

    /// One activation: a slice of records unless the in-flight budget is used up, then an
    /// epoch boundary if one is due.
    pub(crate) fn step(&mut self, emit: &mut impl SourceEmit<O>) -> Result<Next> {
        let began = Instant::now();
        self.move_to_now(emit);
        self.adopt_stop_request()?;
        self.tell_completions()?;
        let stopped = self.stopped();
        let throttled = !stopped && self.flight.full(emit.frontier(), self.emitted);
        let mut more = true;
        let before = self.emitted;
        if !stopped && !throttled {
            more = self.emit_slice(emit)?;
        }
        let waiting = more && self.emitted == before && !self.stopped() && !throttled;
        if self.checkpoints.is_some() {
            self.maybe_close_epoch(emit, more)?;
        }
        if let Some(savepoint) = &self.savepoint {
            if self.stopped() && savepoint.exists(METADATA_FILE)? {
                // The savepoint is complete: end without a final watermark.
                more = false;
            }
        }
        self.shares.activation(began, throttled);
        if !more {
            if let Some((store, _)) = &self.checkpoints {
                store.uploads().flush(&self.key, self.subtask)?;
                let tolerable = store.tolerable_failures();
                store
                    .uploads()
                    .check(&self.key, self.subtask, &self.name, tolerable)?;
            }
        }
        Ok(match (more, self.stopped()) {
            (false, _) => Next::Finished,
            (true, true) => Next::Wait {
                wake: Some(Duration::from_millis(10)),
            },
            (true, false) if throttled => Next::Wait {
                wake: Some(BACKPRESSURE_WAIT),
            },
            (true, false) if waiting => Next::Wait {
                wake: Some(SOURCE_POLL_INTERVAL),
            },
            (true, false) => Next::Now,
        })
    }

    /// Tells the source function of a checkpoint completed since it was last told.
    fn tell_completions(&mut self) -> Result<()> {
        let completed = self.job.completed_checkpoint();
        if completed > self.told {
            self.told = completed;
            if let Some(epoch) = completed {
                self.function.checkpoint_complete(epoch)?;
            }
        }
        Ok(())
    }

    /// Moves the source's time to the current tick (in its epoch), so that a source that has
    /// nothing to emit holds no frontier back, and notes where the new time began.
    fn move_to_now(&mut self, emit: &mut impl SourceEmit<O>) {
        let time = emit.time();
        let tick = self.job.tick_now();
        if tick > tick_of(time) {
            emit.advance(time_at(epoch_of(time), tick));
        }
        self.flight.began(emit.time(), self.emitted);
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
            let more = self
                .function
                .run(&mut self.output, &mut self.tagged, budget)?;
            self.mirror_marks(before);
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
            if !more {
                self.tagged.watermark(i64::MAX);
            }
            if self.output.msgs.len() >= SOURCE_BATCH || stop_now || out_of_time {
                emit.ship(&mut self.output.msgs);
                emit.ship_tagged(&mut self.tagged.msgs);
            }
            if stop_now || out_of_time {
                return Ok(more);
            }
        }
    }

    /// Copies the watermarks and idleness marks emitted since `from` (in the main output)
    /// to the tagged output, so that what reads a side output sees the source's event time.
    fn mirror_marks(&mut self, from: usize) {
        for msg in &self.output.msgs[from..] {
            match msg {
                Msg::Watermark { watermark, .. } => self.tagged.watermark(*watermark),
                Msg::Idle { .. } => self.tagged.idle(),
                Msg::Record { .. } => {}
            }
        }
    }

    /// Closes the current epoch when the interval passed, a savepoint was asked for, or the
    /// source just stopped for a savepoint: writes the position after this epoch's records.
    fn maybe_close_epoch(&mut self, emit: &mut impl SourceEmit<O>, more: bool) -> Result<()> {
        let Some((store, interval)) = &self.checkpoints else {
            return Ok(());
        };
        let epoch = epoch_of(emit.time());
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
            store.uploads().flush(&self.key, self.subtask)?;
            return store.write_ended_source_part(epoch, &self.key, self.subtask, &self.part(true));
        }
        let stopping_now = stopped && self.stopped_at.is_none();
        let due = Instant::now() >= self.next_checkpoint && self.job.may_close(epoch);
        if asked || due || stopping_now {
            // The position is written on the subtask's upload lane, off this thread.
            let uploads = store.uploads();
            uploads.check(
                &self.key,
                self.subtask,
                &self.name,
                store.tolerable_failures(),
            )?;
            let job = store.part_job(epoch, &self.key, self.subtask, self.part(stopped));
            uploads.submit(&self.key, self.subtask, epoch, job)?;
            self.function.checkpointed(epoch);
            emit.advance(time_at(epoch + 1, self.job.tick_now()));
            self.flight.began(emit.time(), self.emitted);
            self.next_checkpoint = Instant::now() + *interval;
            if stopping_now {
                self.stopped_at = Some(epoch);
            }
        }
        Ok(())
    }
}
