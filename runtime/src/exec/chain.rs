//! Operator chains (Flink's `OperatorChain`): the nodes of one chain (see
//! [`StreamGraph::chains`](crate::StreamGraph::chains)) run in one timely operator per
//! subtask, one after the other in the same activation.
//!
//! Every node of a chain keeps its own [`OperatorDriver`] (or, at the head, the source's
//! driver): its own state, its part of every checkpoint under its own key, its watermark
//! and its metrics, so that a checkpoint written with chaining restores without it and the
//! other way round, and nothing a user sees depends on the switch. What chaining removes is
//! what lies between two drivers: the timely channel, its progress tracking, and a timely
//! operator's scheduling. A stage hands what its operator emits on its main output to the
//! next stage's driver by value (the batch the operator filled, not serialized, not copied),
//! and that stage runs as soon as the one before it has; the last stage ships to timely.
//! Side outputs (late data, tagged side outputs) and the progress output of every node
//! stay timely outputs of their own, registered under the node's id, so the nodes reading
//! them and the checkpoint coordinator see each node as without chaining.
//!
//! What stays between two chained operators: the receiving driver's stash of input batches
//! by time (one map entry per batch, not per record) and its epoch bookkeeping, which is
//! what keeps each operator's checkpoint its own.
//!
//! A stage's input frontier is what timely would have shown it without chaining: the least
//! time the node before it still holds on *any* worker (read from a probe of that node's
//! progress output), not only on this one. So a subtask whose predecessor on this worker
//! ended goes on taking part in checkpoints while the predecessor's other subtasks run, and
//! ends with them, as it did unchained; while it waits on other workers it asks to be
//! woken every [`WAIT_ON_PEERS`].

use std::sync::Arc;
use std::time::Duration;

use timely::dataflow::channels::pushers;
use timely::dataflow::operators::probe::Handle as ProbeHandle;
use timely::dataflow::operators::Capability;

use crate::exec::driver::{Emit, Next, OperatorDriver};
use crate::job::{epoch_of, guarded, JobShared, Time};
use crate::operator::contract::{Outputs, SideRecord};
use crate::operator::element::{take_msgs, Batch};
use crate::types::Data;

/// How many timely outputs an operator node has: main, late data, tagged side outputs,
/// progress (see `compile::build_operator`).
pub(crate) const OPERATOR_OUTPUTS: usize = 4;

/// How often a stage whose input frontier waits on other workers looks again.
pub(crate) const WAIT_ON_PEERS: Duration = Duration::from_millis(5);

/// The stage chained after a node, and a probe of that node's progress on every worker
/// (none when the node runs on one worker: its time here is all there is).
pub(crate) struct Chained<M: Data> {
    pub(crate) stage: Box<dyn Stage<M>>,
    pub(crate) upstream: Option<ProbeHandle<Time>>,
}

impl<M: Data> Chained<M> {
    /// The stage's input frontier, given the time the node before it holds on this worker
    /// (`None` once it finished here): the least of that and what the node's other subtasks
    /// hold; and whether that waits on other workers.
    fn frontier(&self, local: Option<Time>) -> (Option<Time>, bool) {
        let Some(upstream) = &self.upstream else {
            return (local, false);
        };
        let global = upstream.with_frontier(|f| f.iter().min().copied());
        match (local, global) {
            (Some(l), Some(g)) => (Some(l.min(g)), g < l),
            (None, Some(g)) => (Some(g), true),
            (local, None) => (local, false),
        }
    }

    /// Runs the stage (and the rest of the chain) with the node before it at `local`.
    pub(crate) fn step(&mut self, local: Option<Time>) -> Next {
        let (frontier, waiting) = self.frontier(local);
        let next = self.stage.step(frontier);
        if waiting {
            both(
                next,
                Next::Wait {
                    wake: Some(WAIT_ON_PEERS),
                },
            )
        } else {
            next
        }
    }
}

/// A node chained after another: takes the batches its predecessor emits, runs its driver
/// after the predecessor's, and the rest of the chain after it.
pub(crate) trait Stage<M: Data> {
    /// Takes a batch the previous operator emitted at `time`.
    fn receive(&mut self, time: Time, batch: Batch<M>);
    /// Takes this stage's capabilities (and the rest of the chain's) from the timely
    /// operator's, downgraded to `start`; a stage with no driver on this worker drops them.
    fn start(&mut self, caps: &mut [Option<Capability<Time>>], start: Time);
    /// Runs this stage as far as its input frontier (the previous driver's time, `None`
    /// once it finished) allows, then the rest of the chain.
    fn step(&mut self, frontier: Option<Time>) -> Next;
}

/// Where a driver's main output goes.
pub(crate) enum MainOut<'a, O: Data> {
    /// A timely output (the last node of a chain).
    Timely(pushers::OutputSession<'a, Time, Batch<O>>),
    /// The next stage of the chain.
    Chained(&'a mut Chained<O>),
}

impl<O: Data> MainOut<'_, O> {
    /// Ships `msgs` at `time` (with `cap`, the main output's capability).
    pub(crate) fn ship(
        &mut self,
        cap: &Capability<Time>,
        time: &Time,
        msgs: &mut Vec<crate::operator::element::Msg<O>>,
    ) {
        if msgs.is_empty() {
            return;
        }
        match self {
            // At the capability's own time (a source's output, most of an operator's) the
            // capability itself; a later time needs one of its own.
            MainOut::Timely(session) if time == cap.time() => {
                session.give(cap, &mut Batch::of(take_msgs(msgs)))
            }
            MainOut::Timely(session) => {
                session.give(&cap.delayed(time), &mut Batch::of(take_msgs(msgs)))
            }
            MainOut::Chained(next) => next.stage.receive(*time, Batch::of(take_msgs(msgs))),
        }
    }

    /// The driver is about to give up every time before `to`, in a later epoch: the next
    /// stage runs first with the driver's frontier still at `now`, so that it finishes what arrived
    /// before the driver moves on, as it would have in an activation of its own (what
    /// its operator makes at the end of an activation, a periodic watermark, then belongs
    /// to the same epoch as without chaining).
    pub(crate) fn before_advance(&mut self, now: Time, to: Time) {
        // Within an epoch (the driver's time moving on by ticks) the next stage runs after
        // the driver's step, as it would have in its own activation.
        if epoch_of(now) == epoch_of(to) {
            return;
        }
        if let MainOut::Chained(next) = self {
            // Its wish for the next activation is asked again after the driver's step.
            let _ = next.step(Some(now));
        }
    }
}

/// An operator driver's outputs: the main output (timely or the next stage), the side
/// output sessions and the node's capabilities (main, side, tagged, progress).
pub(crate) struct TimelyEmit<'a, O: Data, I: Data> {
    pub(crate) main: MainOut<'a, O>,
    pub(crate) side: pushers::OutputSession<'a, Time, Batch<I>>,
    pub(crate) tagged: pushers::OutputSession<'a, Time, Batch<SideRecord>>,
    pub(crate) caps: &'a mut [Capability<Time>],
}

impl<O: Data, I: Data> Emit<O, I> for TimelyEmit<'_, O, I> {
    fn ship(&mut self, epoch: Time, outputs: &mut Outputs<O, I>) {
        self.main
            .ship(&self.caps[0], &epoch, &mut outputs.main.msgs);
        if !outputs.side.msgs.is_empty() {
            self.side.give(
                &self.caps[1].delayed(&epoch),
                &mut Batch::of(std::mem::take(&mut outputs.side.msgs)),
            );
        }
        if !outputs.tagged.msgs.is_empty() {
            self.tagged.give(
                &self.caps[2].delayed(&epoch),
                &mut Batch::of(std::mem::take(&mut outputs.tagged.msgs)),
            );
        }
    }

    fn advance(&mut self, time: Time) {
        self.main.before_advance(*self.caps[0].time(), time);
        self.caps.iter_mut().for_each(|c| c.downgrade(&time));
    }
}

/// The timely outputs of an operator node (see [`OPERATOR_OUTPUTS`]).
pub(crate) struct NodeOutputs<O: Data, I: Data> {
    pub(crate) main: pushers::Output<Time, Batch<O>>,
    pub(crate) side: pushers::Output<Time, Batch<I>>,
    pub(crate) tagged: pushers::Output<Time, Batch<SideRecord>>,
    /// No data: its capability tells the checkpoint coordinator (and the sources' flow
    /// control) which epochs the node has finished.
    pub(crate) _progress: pushers::Output<Time, Batch<()>>,
    /// The index of `main` among the timely operator's outputs.
    pub(crate) first: usize,
}

/// One operator node of a chain, run by its driver.
pub(crate) struct OperatorStage<I: Data, O: Data> {
    name: String,
    job: Arc<JobShared>,
    driver: Option<OperatorDriver<I, O>>,
    outputs: NodeOutputs<O, I>,
    caps: Option<Vec<Capability<Time>>>,
    next: Option<Chained<O>>,
}

impl<I: Data, O: Data> OperatorStage<I, O> {
    pub(crate) fn new(
        name: String,
        job: Arc<JobShared>,
        driver: Option<OperatorDriver<I, O>>,
        outputs: NodeOutputs<O, I>,
        next: Option<Chained<O>>,
    ) -> Self {
        OperatorStage {
            name,
            job,
            driver,
            outputs,
            caps: None,
            next,
        }
    }

    /// Whether the stage's driver runs (on this worker, and not finished or failed).
    pub(crate) fn running(&self) -> bool {
        self.driver.is_some() && self.caps.is_some()
    }

    /// The time the driver holds its capabilities at (its input frontier).
    pub(crate) fn current(&self) -> Option<Time> {
        self.driver.as_ref().map(OperatorDriver::current)
    }
}

impl<I: Data, O: Data> Stage<I> for OperatorStage<I, O> {
    fn receive(&mut self, time: Time, batch: Batch<I>) {
        if let Some(d) = self.driver.as_mut() {
            d.receive(time, batch);
        }
    }

    fn start(&mut self, caps: &mut [Option<Capability<Time>>], start: Time) {
        let range = self.outputs.first..self.outputs.first + OPERATOR_OUTPUTS;
        self.caps = take_caps(caps, range, start, self.driver.is_some());
        if let Some(next) = self.next.as_mut() {
            next.stage.start(caps, start);
        }
    }

    fn step(&mut self, frontier: Option<Time>) -> Next {
        if self.job.failed() {
            self.driver = None;
            self.caps = None;
        }
        let mut next = Next::Finished;
        if let (Some(d), Some(caps)) = (self.driver.as_mut(), self.caps.as_mut()) {
            let main = match self.next.as_mut() {
                Some(next) => MainOut::Chained(next),
                None => MainOut::Timely(self.outputs.main.activate()),
            };
            let mut emit = TimelyEmit {
                main,
                side: self.outputs.side.activate(),
                tagged: self.outputs.tagged.activate(),
                caps,
            };
            let ok = guarded(&self.job, &self.name, || {
                next = d.step(frontier, &mut emit)?;
                Ok(())
            });
            drop(emit);
            if !ok || next == Next::Finished {
                next = Next::Finished;
                self.driver = None;
                self.caps = None;
            }
        }
        match self.next.as_mut() {
            Some(chained) => {
                let local = self.driver.as_ref().map(OperatorDriver::current);
                both(next, chained.step(local))
            }
            None => next,
        }
    }
}

/// Takes the capabilities of the outputs `range` of a timely operator's, downgraded to
/// `start`, for a driver that runs on this worker (`running`); none otherwise (dropping
/// them ends those outputs).
pub(crate) fn take_caps(
    caps: &mut [Option<Capability<Time>>],
    range: std::ops::Range<usize>,
    start: Time,
    running: bool,
) -> Option<Vec<Capability<Time>>> {
    let mine: Option<Vec<Capability<Time>>> =
        caps.get_mut(range)?.iter_mut().map(Option::take).collect();
    mine.filter(|_| running).map(|mut c| {
        c.iter_mut().for_each(|c| c.downgrade(&start));
        c
    })
}

/// What a timely operator running two stages asks of its next activation: at once if
/// either wants to run at once, the earlier wake-up of the two, finished when both are.
pub(crate) fn both(a: Next, b: Next) -> Next {
    match (a, b) {
        (Next::Now, _) | (_, Next::Now) => Next::Now,
        (Next::Finished, other) | (other, Next::Finished) => other,
        (Next::Wait { wake: x }, Next::Wait { wake: y }) => Next::Wait {
            wake: match (x, y) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::both;
    use crate::exec::driver::Next;

    #[test]
    fn a_chain_runs_while_any_stage_does_and_wakes_at_the_earliest() {
        let wait = |ms| Next::Wait {
            wake: Some(Duration::from_millis(ms)),
        };
        let idle = Next::Wait { wake: None };
        assert_eq!(both(Next::Finished, Next::Finished), Next::Finished);
        assert_eq!(both(Next::Finished, idle), idle);
        assert_eq!(both(wait(5), Next::Finished), wait(5));
        assert_eq!(both(wait(5), Next::Now), Next::Now);
        assert_eq!(both(wait(5), wait(3)), wait(3));
        assert_eq!(both(idle, wait(7)), wait(7));
    }
}
