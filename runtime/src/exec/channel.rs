//! The edges between operators: how a batch of records is routed to the subtasks of the
//! next operator (forward, rebalance, broadcast, by key group) and the timely
//! parallelization contract that carries it, in one process or across processes.

use std::rc::Rc;
use std::sync::Arc;

use timely::communication::{Pull, Push};
use timely::dataflow::channels::pact::{DistributorPact, ParallelizationContract, Pipeline};
use timely::dataflow::channels::pushers::exchange::Distributor;
use timely::dataflow::channels::{Message, Stamp};
use timely::logging::TimelyLogger;
use timely::worker::Worker;
use typeinfo::{DataOutputView, TypeSerializer};
use typeinfo_state::{key_group_for_bytes, subtask_for_key_group};

use crate::job::Time;
use crate::operator::contract::KeyOf;
use crate::operator::element::{Batch, Msg, BATCH_CAPACITY};
use crate::types::Data;
use crate::types::Key;

/// Chooses the target subtask of a record on a partitioned edge.
pub(crate) trait Router<T>: 'static {
    /// The target subtask of `value`.
    fn route(&mut self, value: &T) -> usize;
}

/// Makes a router on each worker for a consumer of `(parallelism, max_parallelism)` (routers keep
/// reusable buffers, so one per worker).
pub(crate) type RouterFactory<T> =
    Arc<dyn Fn(u32, u32) -> typeinfo::Result<Box<dyn Router<T>>> + Send + Sync>;

/// How an edge distributes records to the consumer's subtasks.
pub(crate) enum Route<T> {
    /// By key group: `subtask = key_group * parallelism / max_parallelism`.
    Hash(Box<dyn Router<T>>),
    /// Round robin over the consumer's subtasks.
    Rebalance { next: usize },
    /// Every record to every subtask of the consumer.
    Broadcast,
}

/// The distributor behind every exchanging edge: routes records, and sends every watermark
/// to each consumer subtask in order with the records before it.
pub(crate) struct EdgeDistributor<T: Data> {
    route: Route<T>,
    /// Writes the batches that leave the process.
    serializer: Arc<T::Serializer>,
    /// This worker's index (the target of forward edges).
    own: usize,
    /// The consumer's parallelism: subtasks `0..targets` run it.
    targets: usize,
    buffers: Vec<Batch<T>>,
}

impl<T: Data> EdgeDistributor<T> {
    pub(crate) fn new(
        route: Route<T>,
        serializer: Arc<T::Serializer>,
        own: usize,
        targets: usize,
        peers: usize,
    ) -> Self {
        EdgeDistributor {
            route,
            own,
            targets,
            buffers: (0..peers)
                .map(|_| Batch::with_serializer(Vec::new(), Arc::clone(&serializer)))
                .collect(),
            serializer,
        }
    }

    /// Sends `buffer`; a pusher may hand back a sent batch for reuse (the network pushers
    /// hand back the batch they just wrote), so what comes back is emptied and given the
    /// edge's serializer again.
    fn send<S: Clone, P: Push<Message<S, Batch<T>>>>(
        buffer: &mut Batch<T>,
        serializer: &Arc<T::Serializer>,
        stamp: &Stamp<S>,
        pusher: &mut P,
    ) {
        Message::push_at(buffer, stamp.clone(), pusher);
        buffer.msgs.clear();
        buffer.corrupt = None;
        buffer.received = None;
        buffer.wire.take();
        if buffer.serializer.is_none() {
            buffer.serializer = Some(Arc::clone(serializer));
        }
    }

    #[inline]
    fn push<S: Clone, P: Push<Message<S, Batch<T>>>>(
        &mut self,
        target: usize,
        msg: Msg<T>,
        stamp: &Stamp<S>,
        pushers: &mut [P],
    ) {
        let buffer = &mut self.buffers[target];
        if buffer.msgs.capacity() == 0 {
            buffer.msgs.reserve(BATCH_CAPACITY);
        }
        buffer.msgs.push(msg);
        if buffer.msgs.len() >= BATCH_CAPACITY {
            Self::send(buffer, &self.serializer, stamp, &mut pushers[target]);
        }
    }
}

impl<T: Data> Distributor<Batch<T>> for EdgeDistributor<T> {
    fn partition<S: Clone, P: Push<Message<S, Batch<T>>>>(
        &mut self,
        container: &mut Batch<T>,
        stamp: &Stamp<S>,
        pushers: &mut [P],
    ) {
        if let Some(corrupt) = container.corrupt.take() {
            // Forward the failure (with its record count) to this worker's own subtask.
            let mut failed = Batch::corrupt(corrupt.0, corrupt.1);
            Self::send(&mut failed, &self.serializer, stamp, &mut pushers[self.own]);
        }
        for msg in container.msgs.drain(..) {
            match msg {
                Msg::Watermark { .. } | Msg::Idle { .. } => {
                    for target in 0..self.targets {
                        self.push(target, msg.clone(), stamp, pushers);
                    }
                }
                Msg::Record { ts, value } => match &mut self.route {
                    Route::Hash(router) => {
                        // One consumer subtask: no key to serialize and hash.
                        let target = if self.targets == 1 {
                            0
                        } else {
                            router.route(&value)
                        };
                        self.push(target, Msg::Record { ts, value }, stamp, pushers);
                    }
                    Route::Rebalance { next } => {
                        let target = *next;
                        *next = (target + 1) % self.targets;
                        self.push(target, Msg::Record { ts, value }, stamp, pushers);
                    }
                    Route::Broadcast => {
                        for target in 1..self.targets {
                            self.push(
                                target,
                                Msg::Record {
                                    ts,
                                    value: value.clone(),
                                },
                                stamp,
                                pushers,
                            );
                        }
                        self.push(0, Msg::Record { ts, value }, stamp, pushers);
                    }
                },
            }
        }
    }

    fn flush<S: Clone, P: Push<Message<S, Batch<T>>>>(
        &mut self,
        stamp: &Stamp<S>,
        pushers: &mut [P],
    ) {
        for (buffer, pusher) in self.buffers.iter_mut().zip(pushers.iter_mut()) {
            if !buffer.msgs.is_empty() {
                Self::send(buffer, &self.serializer, stamp, pusher);
            }
        }
    }
}

/// The pact of an edge: a direct pipeline for forward edges between subtasks of the same
/// worker, otherwise an exchange through an [`EdgeDistributor`].
pub(crate) enum EdgePact<T: Data> {
    Pipeline,
    Exchange(Box<dyn FnOnce(usize) -> EdgeDistributor<T>>),
}

impl<T: Data> ParallelizationContract<Time, Batch<T>> for EdgePact<T> {
    type Pusher = Box<dyn Push<Message<Time, Batch<T>>>>;
    type Puller = Box<dyn Pull<Message<Time, Batch<T>>>>;
    fn connect(
        self,
        worker: &Worker,
        identifier: usize,
        address: Rc<[usize]>,
        logging: Option<TimelyLogger>,
    ) -> (Self::Pusher, Self::Puller) {
        match self {
            EdgePact::Pipeline => {
                let (push, pull) = Pipeline.connect(worker, identifier, address, logging);
                (Box::new(push), Box::new(pull))
            }
            EdgePact::Exchange(make) => {
                let (push, pull) =
                    DistributorPact(make).connect(worker, identifier, address, logging);
                (Box::new(push), Box::new(pull))
            }
        }
    }
}

/// Routes records by the key group of their key.
pub(crate) struct KeyGroupRouter<T, K: Key> {
    pub(crate) selector: KeyOf<T, K>,
    pub(crate) serializer: K::Serializer,
    pub(crate) buffer: DataOutputView,
    pub(crate) parallelism: u32,
    pub(crate) max_parallelism: u32,
}

impl<T: 'static, K: Key> Router<T> for KeyGroupRouter<T, K> {
    #[inline]
    fn route(&mut self, value: &T) -> usize {
        // A record without a key (never routed here: only a keyed input's records are)
        // would go to subtask 0.
        let Some(key) = self.selector.key(value) else {
            return 0;
        };
        self.buffer.clear();
        // Serializing a key into memory cannot fail for key types; if it ever did, the
        // record goes to subtask 0, whose state backend fails the job on the same key.
        if self.serializer.serialize(&key, &mut self.buffer).is_err() {
            return 0;
        }
        let group = key_group_for_bytes(self.buffer.as_slice(), self.max_parallelism);
        subtask_for_key_group(self.max_parallelism, self.parallelism, group) as usize
    }
}
