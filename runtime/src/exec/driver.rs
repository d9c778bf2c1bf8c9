//! The operator driver: what runs one operator on one worker (the source's driver is
//! [`crate::exec::source_driver`], the checkpoint coordinator [`crate::exec::coordinator`]).
//!
//! A driver owns its operator (or source function), the watermark bookkeeping, the epochs it
//! has stashed and its part of every checkpoint; it knows nothing of how the dataflow is
//! wired. The compile layer calls it from timely's operator closures and hands it an
//! [`Emit`] through which it ships what the operator produced (at an epoch) and gives up
//! the epochs it has finished. Data flows one way: records come in through
//! [`OperatorDriver::receive`], go through the operator (and its state backend), and leave
//! through the emitter.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::checkpoint::format::OperatorPart;
use crate::checkpoint::store::CheckpointStore;
use crate::config::checkpoint_write_delay;
use crate::error::{Error, Result};
use crate::job::{epoch_of, tick_of, Epoch, Time};
use crate::metrics::{Gauge, MetricGroup, SubtaskCounter, TimeShares};
use crate::operator::contract::{now_ms, Operator, OperatorSetup, Outputs};
use crate::operator::element::{sender_id, Batch, Msg};
use crate::types::Data;

/// The minimum of the last watermark of each active upstream subtask (Flink's
/// `StatusWatermarkValve`): an idle subtask holds nothing back until it sends a watermark
/// again; when every input is idle, so is the operator.
pub(crate) struct WatermarkTracker {
    slots: HashMap<u32, usize>,
    marks: Vec<i64>,
    idle: Vec<bool>,
    pub(crate) current: i64,
}

/// What an input going idle changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdleChange {
    /// The operator's watermark advanced to this.
    pub(crate) advanced: Option<i64>,
    /// Every input is idle now (so is the operator).
    pub(crate) idle: bool,
}

impl WatermarkTracker {
    pub(crate) fn new(senders: &[u32]) -> Self {
        WatermarkTracker {
            slots: senders.iter().enumerate().map(|(i, s)| (*s, i)).collect(),
            marks: vec![i64::MIN; senders.len()],
            idle: vec![false; senders.len()],
            current: i64::MIN,
        }
    }

    /// Starts from a restored watermark (for every input subtask).
    pub(crate) fn restore(&mut self, watermark: i64) {
        self.marks.iter_mut().for_each(|m| *m = watermark);
        self.current = watermark;
    }

    fn slot(&self, from: u32) -> Result<usize> {
        self.slots
            .get(&from)
            .copied()
            .ok_or_else(|| Error::Corrupt(format!("a watermark from unknown sender {from:#x}")))
    }

    /// The minimum over active inputs, if it advanced the operator's watermark.
    fn advance(&mut self) -> Option<i64> {
        let min = self
            .marks
            .iter()
            .zip(&self.idle)
            .filter(|(_, idle)| !**idle)
            .map(|(m, _)| *m)
            .min()?;
        (min > self.current).then(|| {
            self.current = min;
            min
        })
    }

    /// Records a watermark of `from` (which makes it active again); returns the operator's
    /// new watermark if it advanced.
    pub(crate) fn update(&mut self, from: u32, watermark: i64) -> Result<Option<i64>> {
        let slot = self.slot(from)?;
        let was_idle = std::mem::replace(&mut self.idle[slot], false);
        if watermark <= self.marks[slot] && !was_idle {
            return Ok(None);
        }
        self.marks[slot] = self.marks[slot].max(watermark);
        Ok(self.advance())
    }

    /// Marks `from` idle: the others' minimum may advance; when every input is idle, the
    /// watermark advances to the highest of them (as Flink's valve flushes), and the
    /// operator is idle.
    pub(crate) fn set_idle(&mut self, from: u32) -> Result<IdleChange> {
        let slot = self.slot(from)?;
        if std::mem::replace(&mut self.idle[slot], true) {
            return Ok(IdleChange {
                advanced: None,
                idle: false,
            });
        }
        if self.idle.iter().all(|i| *i) {
            let max = self.marks.iter().copied().max().unwrap_or(i64::MIN);
            let advanced = (max > self.current).then(|| {
                self.current = max;
                max
            });
            return Ok(IdleChange {
                advanced,
                idle: true,
            });
        }
        Ok(IdleChange {
            advanced: self.advance(),
            idle: false,
        })
    }
}

/// Where a driver's output goes: the compile layer's timely outputs and capabilities.
pub(crate) trait Emit<O, I> {
    /// Ships what the operator emitted, at `time`.
    fn ship(&mut self, time: Time, outputs: &mut Outputs<O, I>);
    /// Gives up every time before `time` (the operator finished them).
    fn advance(&mut self, time: Time);
}

/// What a driver asks of its next activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Run again when input arrives (or after `wake`).
    Wait { wake: Option<Duration> },
    /// Run again at once (a source with more to emit).
    Now,
    /// Done: drop the driver and its capabilities.
    Finished,
}

/// Everything an operator driver is built from.
pub(crate) struct OperatorDriverSetup {
    pub(crate) setup: OperatorSetup,
    /// The subtasks whose watermarks reach this one.
    pub(crate) senders: Vec<u32>,
    /// The first time of this run.
    pub(crate) start: Time,
    pub(crate) checkpoints: Option<CheckpointStore>,
    /// The run ends with a savepoint: at the end of input nothing fires.
    pub(crate) stopping: bool,
}

/// Runs a one-input operator: stashes input batches by time, hands records and advanced
/// watermarks to the operator one epoch at a time (aligned checkpoints), writes its part of
/// every checkpoint when the input frontier passes an epoch, fires processing time, and
/// gives up its capabilities up to its input frontier as soon as it is done with what came
/// before it (which is what the sources' flow control reads).
pub(crate) struct OperatorDriver<I: Data, O> {
    operator: Box<dyn Operator<I, O>>,
    input_serializer: I::Serializer,
    tracker: WatermarkTracker,
    stash: BTreeMap<Time, Vec<Batch<I>>>,
    outputs: Outputs<O, I>,
    /// The time the operator holds its capabilities at (its last input frontier): every
    /// earlier time is finished, and its epoch is the one the operator is in.
    current: Time,
    setup: OperatorSetup,
    checkpoints: Option<CheckpointStore>,
    stopping: bool,
    /// Restored from the final state of a subtask whose input had ended.
    finished: bool,
    /// The time the output of a watermark's unfinished firing ships at (see `drain`).
    paused_at: Option<Time>,
    metrics: OperatorMetrics,
}

/// The runtime's own metrics of one operator subtask.
struct OperatorMetrics {
    records_in: SubtaskCounter,
    records_out: SubtaskCounter,
    watermark: Gauge,
    watermark_lag: Gauge,
    shares: TimeShares,
    /// The last checkpoint's synchronous half, its asynchronous half (set by the upload
    /// lane), and its alignment (from the first record of the next epoch that had to wait
    /// until the barrier passed), in milliseconds, as Flink's checkpoint statistics.
    sync_ms: Gauge,
    async_ms: Gauge,
    alignment_ms: Gauge,
    /// Since when records of a later epoch wait for this one to end.
    aligning_since: Option<std::time::Instant>,
}

impl OperatorMetrics {
    fn new(setup: &OperatorSetup) -> Self {
        let group = MetricGroup::new(&setup.name, setup.subtask, Arc::clone(&setup.job.metrics));
        OperatorMetrics {
            records_in: group.subtask_counter("numRecordsIn"),
            records_out: group.subtask_counter("numRecordsOut"),
            watermark: group.gauge("currentInputWatermark"),
            watermark_lag: group.gauge("watermarkLag"),
            shares: TimeShares::new(&group),
            sync_ms: group.gauge("checkpointSyncDurationMs"),
            async_ms: group.gauge("checkpointAsyncDurationMs"),
            alignment_ms: group.gauge("checkpointAlignmentTimeMs"),
            aligning_since: None,
        }
    }

    fn watermark(&self, watermark: i64) {
        self.watermark.set(watermark);
        if watermark > i64::MIN && watermark < i64::MAX {
            self.watermark_lag.set(now_ms().saturating_sub(watermark));
        }
    }
}

impl<I: Data, O: Data> OperatorDriver<I, O> {
    /// Makes the operator with `make` and restores it from the run's snapshot, if any.
    pub(crate) fn open(
        config: OperatorDriverSetup,
        input_serializer: I::Serializer,
        make: impl FnOnce(&OperatorSetup) -> Result<Box<dyn Operator<I, O>>>,
    ) -> Result<Self> {
        let OperatorDriverSetup {
            setup,
            senders,
            start,
            checkpoints,
            stopping,
        } = config;
        let mut tracker = WatermarkTracker::new(&senders);
        let mut operator = make(&setup)?;
        let mut finished = false;
        if let Some(restore) = &setup.restore {
            finished = restore.finished(&setup.key)?;
            let parts = restore.parts(&setup.key)?;
            if let Some(w) = parts.iter().map(|p| p.watermark).min() {
                tracker.restore(w);
            }
            let files = restore.fetch(&setup.key)?;
            operator.restore(&files.keyed, &parts)?;
            if let (Some(state), false) =
                (operator.operator_state(), files.operator_state.is_empty())
            {
                let files: Vec<&std::path::Path> =
                    files.operator_state.iter().map(PathBuf::as_path).collect();
                state.restore(&files).map_err(|source| Error::State {
                    operator: setup.name.clone(),
                    source,
                })?;
            }
        }
        operator.open()?;
        let from = sender_id(setup.node, setup.subtask);
        let metrics = OperatorMetrics::new(&setup);
        Ok(OperatorDriver {
            metrics,
            operator,
            input_serializer,
            tracker,
            stash: BTreeMap::new(),
            outputs: Outputs::new(from),
            current: start,
            setup,
            checkpoints,
            stopping,
            finished,
            paused_at: None,
        })
    }

    /// The time the driver holds its capabilities at: every earlier time is finished (the
    /// input frontier of an operator chained after it).
    pub(crate) fn current(&self) -> Time {
        self.current
    }

    /// Takes an input batch of `time` (processed in [`step`](Self::step)).
    pub(crate) fn receive(&mut self, time: Time, batch: Batch<I>) {
        self.setup.job.saw_tick(tick_of(time));
        if epoch_of(time) > epoch_of(self.current) && self.metrics.aligning_since.is_none() {
            self.metrics.aligning_since = Some(std::time::Instant::now());
        }
        self.stash.entry(time).or_default().push(batch);
    }

    /// Runs the operator as far as the input `frontier` allows (`None`: every input is
    /// exhausted): every batch of a finished epoch, in epoch order; then, if the frontier
    /// moved, this subtask's part of the checkpoint of the last finished epoch; then the
    /// batches of the current epoch (which belong to the next checkpoint); then due
    /// processing time, and the end of input.
    pub(crate) fn step(
        &mut self,
        frontier: Option<Time>,
        emit: &mut impl Emit<O, I>,
    ) -> Result<Next> {
        let began = std::time::Instant::now();
        let next = self.run(frontier, emit);
        self.metrics.shares.activation(began, false);
        next
    }

    fn run(&mut self, frontier: Option<Time>, emit: &mut impl Emit<O, I>) -> Result<Next> {
        // A watermark's firing left unfinished comes first (see `Operator::firing`).
        if self.operator.firing() {
            self.operator.resume_firing(&mut self.outputs)?;
            let time = self.paused_at.unwrap_or(self.current);
            self.ship(time, emit);
            if self.operator.firing() {
                return Ok(Next::Now);
            }
            self.paused_at = None;
        }
        let epoch = frontier.map(epoch_of);
        if self.drain(epoch, emit)? {
            return Ok(Next::Now);
        }
        if let Some(f) = frontier.filter(|f| *f > self.current) {
            if epoch_of(f) > epoch_of(self.current) {
                let aligned = self.metrics.aligning_since.take();
                self.metrics
                    .alignment_ms
                    .set(aligned.map_or(0, |t| t.elapsed().as_millis() as i64));
                self.checkpoint(epoch_of(f) - 1)?;
            }
            self.current = f;
            emit.advance(f);
        }
        if self.drain(epoch.map(|e| e + 1), emit)? {
            return Ok(Next::Now);
        }
        self.operator.begin_epoch(epoch_of(self.current));
        let mut wake = None;
        if let Some(due) = self.operator.next_processing_time() {
            let now = now_ms();
            if due <= now {
                self.operator.processing_time(now, &mut self.outputs)?;
            }
            if let Some(next) = self.operator.next_processing_time() {
                wake = Some(Duration::from_millis((next - now_ms()).max(1) as u64));
            }
        }
        self.operator.end_of_activation(&mut self.outputs)?;
        self.ship(self.current, emit);
        if frontier.is_none() {
            // Every input is exhausted: the end of the job, or a stop with a savepoint (whose
            // state was written with the last checkpoint, and after which nothing fires).
            // With a stop with a savepoint, the input ended by the stop (no final watermark:
            // nothing ends, nothing fires) or, before it, by the end of its sources (the
            // maximal watermark came first).
            let stopping = self.stopping || self.setup.job.stop_requested().is_some();
            let ended = !stopping || self.tracker.current == i64::MAX;
            if ended {
                // A subtask restored from its final state (it had ended before the
                // snapshot) does not end its input a second time.
                if !self.finished {
                    if self.operator.finish_step(&mut self.outputs)? {
                        // More to do (a sorted input in batch mode): ship this slice and come
                        // back, so that consumers run in between and the output stays bounded.
                        self.ship(self.current, emit);
                        return Ok(Next::Now);
                    }
                    self.operator.finish(&mut self.outputs)?;
                }
                // Its final state is its part of every later checkpoint.
                self.write_ended()?;
            }
            self.ship(self.current, emit);
            self.flush_checkpoints()?;
            return Ok(Next::Finished);
        }
        Ok(Next::Wait { wake })
    }

    /// Ships what the operator emitted, at `time`, counting its records.
    fn ship(&mut self, time: Time, emit: &mut impl Emit<O, I>) {
        let out = std::mem::take(&mut self.outputs.main.records);
        if out > 0 {
            self.metrics.records_out.inc_by(out);
        }
        emit.ship(time, &mut self.outputs);
    }

    /// Processes the stashed batches of every epoch below `below` (all with `None`), in time
    /// order. What a batch of the capabilities' epoch makes is shipped at the capabilities'
    /// time (a batch of the current epoch may be processed before the frontier reaches its
    /// time), what a batch of a later epoch makes at the batch's time: so every output
    /// leaves in time order, which its consumer's stash (ordered by time) relies on to see
    /// records and watermarks in the order they were made.
    ///
    /// `true` when a watermark left timers to fire (`Operator::firing`): the output so far is
    /// shipped, the rest of the batch goes back to the front of the stash, and the driver
    /// comes back (the frontier does not move, nor does a checkpoint start, until the firing
    /// is done).
    fn drain(&mut self, below: Option<Epoch>, emit: &mut impl Emit<O, I>) -> Result<bool> {
        while let Some((&time, _)) = self.stash.first_key_value() {
            let time_key = time;
            let epoch = epoch_of(time);
            if below.is_some_and(|b| epoch >= b) {
                break;
            }
            let Some(batches) = self.stash.remove(&time) else {
                break;
            };
            let time = if epoch == epoch_of(self.current) {
                self.current
            } else {
                time
            };
            self.operator.begin_epoch(epoch);
            let mut batches = batches.into_iter();
            while let Some(mut batch) = batches.next() {
                batch
                    .decode_received(&self.input_serializer)
                    .map_err(|m| Error::Corrupt(format!("a batch from another worker: {m}")))?;
                let mut records = 0;
                let mut msgs = std::mem::take(&mut batch.msgs).into_iter();
                while let Some(msg) = msgs.next() {
                    match msg {
                        Msg::Record {
                            ts,
                            value,
                            key_group,
                        } => {
                            records += 1;
                            match key_group {
                                None => self.operator.process(ts, value, &mut self.outputs)?,
                                Some(group) => self.operator.process_in_group(
                                    ts,
                                    value,
                                    group,
                                    &mut self.outputs,
                                )?,
                            }
                        }
                        Msg::Watermark { from, watermark } => {
                            if let Some(w) = self.tracker.update(from, watermark)? {
                                self.metrics.watermark(w);
                                self.operator.watermark(w, &mut self.outputs)?;
                            }
                        }
                        Msg::Idle { from } => {
                            let change = self.tracker.set_idle(from)?;
                            if let Some(w) = change.advanced {
                                self.metrics.watermark(w);
                                self.operator.watermark(w, &mut self.outputs)?;
                            }
                            if change.idle {
                                self.outputs.idle();
                            }
                        }
                    }
                    if self.operator.firing() {
                        let rest: Vec<Msg<I>> = msgs.collect();
                        let mut left: Vec<Batch<I>> = Vec::new();
                        if !rest.is_empty() {
                            left.push(Batch::of(rest));
                        }
                        left.extend(batches);
                        if !left.is_empty() {
                            self.stash.insert(time_key, left);
                        }
                        self.metrics.records_in.inc_by(records);
                        self.paused_at = Some(time);
                        self.ship(time, emit);
                        return Ok(true);
                    }
                }
                self.metrics.records_in.inc_by(records);
                self.ship(time, emit);
            }
        }
        Ok(false)
    }

    /// Writes this subtask's part of checkpoint `epoch`: keyed state first, the operator part
    /// (the marker that the subtask's part is whole) last.
    /// The input ended while the job may go on: writes this subtask's final state as its
    /// part of every later checkpoint (see [`CheckpointStore::write_ended_operator_part`]).
    fn write_ended(&mut self) -> Result<()> {
        let Some(store) = &self.checkpoints else {
            return Ok(());
        };
        let (key, subtask) = (&self.setup.key, self.setup.subtask);
        // Every checkpoint before comes first (a restore must not see this subtask's final
        // state beside a part of an earlier checkpoint still being written).
        store.uploads().flush(key, subtask)?;
        let keyed = store.ended_keyed_part(epoch_of(self.current), key, subtask);
        let data = self.operator.snapshot(epoch_of(self.current), &keyed)?;
        run_in_order(keyed.take_deferred())?;
        if let Some(state) = self.operator.operator_state() {
            store.write_ended_operator_state(key, subtask, |path| {
                state
                    .snapshot(path)
                    .map(drop)
                    .map_err(|source| Error::State {
                        operator: self.setup.name.clone(),
                        source,
                    })
            })?;
        }
        let part = OperatorPart {
            watermark: self.tracker.current,
            data,
        };
        store.write_ended_operator_part(key, subtask, &part)
    }

    /// Waits until this subtask's checkpoints are written (before it ends: the coordinator
    /// completes them once every part is there).
    fn flush_checkpoints(&self) -> Result<()> {
        let Some(store) = &self.checkpoints else {
            return Ok(());
        };
        let (key, subtask) = (&self.setup.key, self.setup.subtask);
        store.uploads().flush(key, subtask)?;
        store
            .uploads()
            .check(key, subtask, &self.setup.name, store.tolerable_failures())
    }

    /// Writes this subtask's part of checkpoint `epoch`: the synchronous half now (the
    /// operator's snapshot, a native RocksDB checkpoint or the heap's state serialized, the
    /// operator state), the rest on the subtask's upload lane, the operator part last (see
    /// [`crate::checkpoint::upload`]).
    fn checkpoint(&mut self, epoch: Epoch) -> Result<()> {
        let Some(store) = &self.checkpoints else {
            return Ok(());
        };
        let began = std::time::Instant::now();
        let (key, subtask) = (&self.setup.key, self.setup.subtask);
        store
            .uploads()
            .check(key, subtask, &self.setup.name, store.tolerable_failures())?;
        let keyed = store.keyed_part(epoch, key, subtask);
        let data = self.operator.snapshot(epoch, &keyed)?;
        let mut jobs = keyed.take_deferred();
        if let Some(state) = self.operator.operator_state() {
            let name = &self.setup.name;
            jobs.push(store.snapshot_operator_state(epoch, key, subtask, |path| {
                state
                    .snapshot(path)
                    .map(drop)
                    .map_err(|source| Error::State {
                        operator: name.clone(),
                        source,
                    })
            })?);
        }
        let part = OperatorPart {
            watermark: self.tracker.current,
            data,
        };
        jobs.push(store.part_job(epoch, key, subtask, part));
        self.metrics.sync_ms.set(began.elapsed().as_millis() as i64);
        let async_ms = self.metrics.async_ms.clone();
        store.uploads().submit(
            key,
            subtask,
            epoch,
            Box::new(move || {
                let began = std::time::Instant::now();
                let written = run_in_order(jobs);
                async_ms.set(began.elapsed().as_millis() as i64);
                written
            }),
        )
    }
}

/// Runs the asynchronous halves of a subtask's checkpoint in order (the operator part, last,
/// only once the rest is written).
pub(crate) fn run_in_order(jobs: Vec<crate::checkpoint::upload::Job>) -> Result<()> {
    if let Some(delay) = checkpoint_write_delay() {
        // Fault injection: widen the window in which a crash leaves a half-written checkpoint.
        std::thread::sleep(delay);
    }
    jobs.into_iter().try_for_each(|job| job())
}

#[cfg(test)]
mod tests {
    use super::{IdleChange, WatermarkTracker};

    fn change(advanced: Option<i64>, idle: bool) -> IdleChange {
        IdleChange { advanced, idle }
    }

    #[test]
    fn an_idle_input_holds_nothing_back_and_rejoins_with_its_next_watermark() {
        let mut t = WatermarkTracker::new(&[1, 2]);
        assert_eq!(t.update(1, 100).unwrap(), None, "2 has no watermark yet");
        assert_eq!(t.set_idle(2).unwrap(), change(Some(100), false));
        assert_eq!(t.update(1, 150).unwrap(), Some(150));
        // 2 rejoins below the current watermark: it holds back what comes next, the
        // operator's watermark never goes back.
        assert_eq!(t.update(2, 120).unwrap(), None);
        assert_eq!(t.update(1, 200).unwrap(), None);
        assert_eq!(t.update(2, 180).unwrap(), Some(180));
        assert_eq!(
            t.set_idle(1).unwrap(),
            change(None, false),
            "2 alone is at 180"
        );
        // Every input idle: the highest watermark of them (1's 200) is flushed.
        assert_eq!(t.set_idle(2).unwrap(), change(Some(200), true));
        assert!(t.update(7, 1).is_err(), "an unknown sender is refused");
    }
}
