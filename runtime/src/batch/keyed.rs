//! Keyed operators in batch mode: the input sorted by key and timestamp, then one key at a
//! time with that key's state only; a failing stage reruns from its kept sorted input.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::batch::sort::{NormalizedKeySorter, SortConfig, SortedRecords};
use crate::config::RestartStrategy;
use crate::error::{Error, Result};
use crate::job::panic_message;
use crate::operator::contract::{KeyOf, Operator, OperatorSetup, Output, Outputs, SideRecord};
use crate::operator::element::{sender_id, Msg};
use crate::types::{Data, Key};

/// Records a keyed operator handles per activation at the end of its input before it lets
/// its consumers run (bounds the output held between activations).
const SLICE: usize = 4096;

/// Creates a keyed operator (again, when its stage reruns).
type MakeOperator<I, O> = Box<dyn Fn(&OperatorSetup) -> Result<Box<dyn Operator<I, O>>>>;

/// The operator of a keyed input, made by `make`: in batch mode wrapped into
/// [`SortedKeyedInput`], as is in streaming mode.
pub(crate) fn keyed_operator<K: Key, I: Data, O: Data>(
    setup: &OperatorSetup,
    selector: &KeyOf<I, K>,
    make: impl Fn(&OperatorSetup) -> Result<Box<dyn Operator<I, O>>> + 'static,
) -> Result<Box<dyn Operator<I, O>>> {
    if !setup.batch {
        return make(setup);
    }
    let inner = make(setup)?;
    let held = if matches!(setup.restart_strategy, RestartStrategy::None) {
        None
    } else {
        Some(HeldOutput::new(setup)?)
    };
    Ok(Box::new(SortedKeyedInput {
        selector: selector.clone(),
        sorter: Some(sorter(setup)?),
        unkeyed: Vec::new(),
        unkeyed_next: 0,
        sorted: None,
        current: None,
        inner,
        make: Box::new(make),
        setup: setup.clone(),
        held,
    }))
}

/// A sorter with the job's memory budget and serializers. Spilled runs go to the system's
/// temporary directory (`TMPDIR`), unlinked.
fn sorter<K: typeinfo::KeyType, V: typeinfo::TypeInfo>(
    setup: &OperatorSetup,
) -> Result<NormalizedKeySorter<K, V>> {
    NormalizedKeySorter::new(SortConfig::default().memory_budget(setup.batch_sort_memory))?
        .with_serializer_config(setup.serializer_config.clone())
}

/// A keyed operator in batch mode: sorts its input by (key, timestamp), then runs the
/// operator key by key, ending each key with [`Operator::end_of_key`]; reruns it from the
/// sorted input when it fails and a restart strategy allows.
struct SortedKeyedInput<K: Key, I: Data, O: Data> {
    selector: KeyOf<I, K>,
    /// Takes the input; `None` once sorted.
    sorter: Option<NormalizedKeySorter<K, I>>,
    /// The records without a key (a keyed broadcast operator's broadcast input), in arrival
    /// order: the operator gets them before the first key, as Flink's batch mode reads a
    /// broadcast input first. Kept until the stage completes, for a rerun.
    unkeyed: Vec<(i64, I)>,
    /// How many of `unkeyed` the operator got.
    unkeyed_next: usize,
    /// The sorted input, being replayed.
    sorted: Option<SortedRecords<K, I>>,
    /// The key whose records the operator is receiving.
    current: Option<K>,
    inner: Box<dyn Operator<I, O>>,
    make: MakeOperator<I, O>,
    setup: OperatorSetup,
    /// With a restart strategy: the stage's output, held until the stage completes.
    held: Option<HeldOutput<I, O>>,
}

impl<K: Key, I: Data, O: Data> SortedKeyedInput<K, I, O> {
    /// Runs the operator on up to [`SLICE`] sorted records, emitting into `out`; at the end
    /// of the input, ends the last key, fires the end of event time and ends the operator.
    /// `false` once the input is done.
    fn replay(&mut self, out: &mut Outputs<O, I>) -> Result<bool> {
        if self.unkeyed_next < self.unkeyed.len() {
            let end = (self.unkeyed_next + SLICE).min(self.unkeyed.len());
            while self.unkeyed_next < end {
                let (ts, value) = self.unkeyed[self.unkeyed_next].clone();
                self.unkeyed_next += 1;
                self.inner.process(ts, value, out)?;
            }
            return Ok(true);
        }
        for _ in 0..SLICE {
            let Some(sorted) = self.sorted.as_mut() else {
                return Ok(false);
            };
            let Some(record) = sorted.next() else {
                if self.current.take().is_some() {
                    self.inner.end_of_key(out)?;
                }
                self.inner.watermark(i64::MAX, out)?;
                // Every key's timers fired at its end: nothing is left for the final
                // watermark to fire beyond a slice, but a slice is not assumed.
                while self.inner.firing() {
                    self.inner.resume_firing(out)?;
                }
                self.inner.finish(out)?;
                // Kept until here: a failure above reruns the stage from it.
                self.sorted = None;
                self.unkeyed = Vec::new();
                return Ok(false);
            };
            let (key, ts, value) = record?;
            if self.current.as_ref() != Some(&key) {
                if self.current.is_some() {
                    self.inner.end_of_key(out)?;
                }
                self.current = Some(key);
            }
            self.inner.process(ts, value, out)?;
        }
        Ok(true)
    }

    /// A slice of the stage with its output held: `Ok(true)` while the stage runs, `Ok(false)`
    /// once it completed (its output is then in `held`'s partitions). A failure of the
    /// operator (error or panic) comes back as the error.
    fn replay_held(&mut self) -> Result<bool> {
        let Some(mut buffer) = self
            .held
            .as_mut()
            .map(|h| std::mem::replace(&mut h.buffer, Outputs::new(0)))
        else {
            return Ok(false);
        };
        let more =
            catch_unwind(AssertUnwindSafe(|| self.replay(&mut buffer))).unwrap_or_else(|payload| {
                Err(Error::Function {
                    operator: self.setup.name.clone(),
                    message: panic_message(payload),
                })
            });
        let held = self
            .held
            .as_mut()
            .ok_or_else(|| Error::Config("held output".into()))?;
        let more = more.and_then(|more| {
            held.take(&mut buffer)?;
            Ok(more)
        });
        held.buffer = buffer;
        more
    }

    /// The stage failed with `error`: reruns it from the first sorted record when the
    /// restart strategy has an attempt left (after its delay), else returns the error.
    fn rerun(&mut self, error: Error) -> Result<()> {
        let error = error.in_operator(&self.setup.name);
        let job = Arc::clone(&self.setup.job);
        let attempt = job.next_restart_attempt();
        let Some(delay) = self
            .setup
            .restart_strategy
            .delay(attempt)
            .filter(|_| error.is_restartable())
        else {
            return Err(error);
        };
        eprintln!(
            "batch stage `{}` (subtask {}) failed: {error}; rerunning it from its sorted input \
             (restart {attempt}) in {delay:?}",
            self.setup.name, self.setup.subtask
        );
        job.count("job.numStageRestarts", 1);
        let until = Instant::now() + delay;
        while Instant::now() < until && !job.failed() {
            std::thread::sleep(Duration::from_millis(5).min(delay));
        }
        if job.failed() {
            // The job ends anyway (cancelled, or another operator failed).
            return Err(error);
        }
        self.inner = (self.make)(&self.setup)?;
        self.inner.open()?;
        self.current = None;
        self.unkeyed_next = 0;
        if let Some(sorted) = self.sorted.as_mut() {
            sorted.rewind()?;
        }
        self.held = Some(HeldOutput::new(&self.setup)?);
        Ok(())
    }
}

impl<K: Key, I: Data, O: Data> Operator<I, O> for SortedKeyedInput<K, I, O> {
    #[inline]
    fn process(&mut self, ts: i64, value: I, _out: &mut Outputs<O, I>) -> Result<()> {
        let key = self.selector.key(&value);
        match (self.sorter.as_mut(), key) {
            (Some(sorter), Some(key)) => sorter.add(&key, ts, &value),
            (Some(_), None) => {
                self.unkeyed.push((ts, value));
                Ok(())
            }
            (None, _) => Err(Error::Config(
                "a record arrived after the end of a batch operator's input".into(),
            )),
        }
    }

    /// Watermarks are not passed on (the operator's event time is per key); the maximal one
    /// follows the last key.
    fn watermark(&mut self, _watermark: i64, _out: &mut Outputs<O, I>) -> Result<()> {
        Ok(())
    }

    fn finish_step(&mut self, out: &mut Outputs<O, I>) -> Result<bool> {
        if let Some(sorter) = self.sorter.take() {
            // `<operator>.numSpilledRuns`: sorted runs this subtask wrote to disk.
            let runs = sorter.spilled_runs() as u64;
            self.setup
                .job
                .count(&format!("{}.numSpilledRuns", self.setup.name), runs);
            self.sorted = Some(sorter.finish()?);
        }
        if self.held.is_none() {
            return self.replay(out);
        }
        if self.sorted.is_some() {
            match self.replay_held() {
                Ok(true) => return Ok(true),
                Ok(false) => {
                    // The stage completed (its input is freed): publish its output.
                    if let Some(held) = self.held.as_mut() {
                        held.publish()?;
                    }
                }
                Err(error) => {
                    self.rerun(error)?;
                    return Ok(true);
                }
            }
        }
        let more = match self.held.as_mut() {
            Some(held) => held.emit(out)?,
            None => false,
        };
        if !more {
            out.watermark(i64::MAX);
        }
        Ok(more)
    }

    fn open(&mut self) -> Result<()> {
        self.inner.open()
    }

    fn operator_state(&mut self) -> Option<&mut typeinfo_state::OperatorStateBackend> {
        self.inner.operator_state()
    }
}

/// A stage's output held until the stage completes (Flink's blocking result partition): the
/// records of each output in the order the operator emitted them, in memory up to the sort
/// budget and spilled beyond it (a sorter keyed by the record's sequence number, whose order
/// is arrival order). Watermarks are not held: the maximal one follows the published output.
struct HeldOutput<I: Data, O: Data> {
    /// What the operator emits in the current slice.
    buffer: Outputs<O, I>,
    main: Partition<O>,
    side: Partition<I>,
    tagged: Partition<SideRecord>,
}

impl<I: Data, O: Data> HeldOutput<I, O> {
    fn new(setup: &OperatorSetup) -> Result<Self> {
        Ok(HeldOutput {
            buffer: Outputs::new(sender_id(setup.node, setup.subtask)),
            main: Partition::new(setup)?,
            side: Partition::new(setup)?,
            tagged: Partition::new(setup)?,
        })
    }

    /// Moves the records of `buffer` into the partitions (dropping its watermarks).
    fn take(&mut self, buffer: &mut Outputs<O, I>) -> Result<()> {
        self.main.take(&mut buffer.main)?;
        self.side.take(&mut buffer.side)?;
        self.tagged.take(&mut buffer.tagged)
    }

    fn publish(&mut self) -> Result<()> {
        self.main.publish()?;
        self.side.publish()?;
        self.tagged.publish()
    }

    /// Emits up to [`SLICE`] published records of each output into `out`; `true` while
    /// more remain.
    fn emit(&mut self, out: &mut Outputs<O, I>) -> Result<bool> {
        let main = self.main.emit(&mut out.main)?;
        let side = self.side.emit(&mut out.side)?;
        let tagged = self.tagged.emit(&mut out.tagged)?;
        Ok(main || side || tagged)
    }
}

/// One output's held records: being written, then being read.
enum Partition<T: Data> {
    Writing {
        records: NormalizedKeySorter<u64, T>,
        next: u64,
    },
    Reading(SortedRecords<u64, T>),
    Done,
}

impl<T: Data> Partition<T> {
    fn new(setup: &OperatorSetup) -> Result<Self> {
        Ok(Partition::Writing {
            records: sorter(setup)?,
            next: 0,
        })
    }

    fn take(&mut self, output: &mut Output<T>) -> Result<()> {
        output.records = 0;
        let Partition::Writing { records, next } = self else {
            output.msgs.clear();
            return Ok(());
        };
        for msg in output.msgs.drain(..) {
            if let Msg::Record { ts, value, .. } = msg {
                records.add(next, ts, &value)?;
                *next += 1;
            }
        }
        Ok(())
    }

    fn publish(&mut self) -> Result<()> {
        if let Partition::Writing { .. } = self {
            let Partition::Writing { records, .. } = std::mem::replace(self, Partition::Done)
            else {
                return Ok(());
            };
            *self = Partition::Reading(records.finish()?);
        }
        Ok(())
    }

    fn emit(&mut self, out: &mut Output<T>) -> Result<bool> {
        let Partition::Reading(records) = self else {
            return Ok(false);
        };
        for _ in 0..SLICE {
            match records.next() {
                Some(record) => {
                    let (_, ts, value) = record?;
                    out.collect(ts, value);
                }
                None => {
                    *self = Partition::Done;
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}
