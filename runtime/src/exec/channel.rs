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
    /// The target subtask of `value`, and the key group of its key when that chose it.
    fn route(&mut self, value: &T) -> (usize, Option<u16>);
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
                // A key group an upstream exchange computed belongs to that exchange's key:
                // only a hash route hands one on, the one it computes.
                Msg::Record { ts, value, .. } => match &mut self.route {
                    Route::Hash(router) => {
                        // One consumer subtask: no key to serialize and hash (the keyed
                        // operator computes the group itself).
                        let (target, key_group) = if self.targets == 1 {
                            (0, None)
                        } else {
                            router.route(&value)
                        };
                        let record = Msg::Record {
                            ts,
                            value,
                            key_group,
                        };
                        self.push(target, record, stamp, pushers);
                    }
                    Route::Rebalance { next } => {
                        let target = *next;
                        *next = (target + 1) % self.targets;
                        let record = Msg::Record {
                            ts,
                            value,
                            key_group: None,
                        };
                        self.push(target, record, stamp, pushers);
                    }
                    Route::Broadcast => {
                        for target in 1..self.targets {
                            self.push(
                                target,
                                Msg::Record {
                                    ts,
                                    value: value.clone(),
                                    key_group: None,
                                },
                                stamp,
                                pushers,
                            );
                        }
                        let record = Msg::Record {
                            ts,
                            value,
                            key_group: None,
                        };
                        self.push(0, record, stamp, pushers);
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
    fn route(&mut self, value: &T) -> (usize, Option<u16>) {
        // A record without a key (never routed here: only a keyed input's records are)
        // would go to subtask 0.
        let Some(key) = self.selector.key(value) else {
            return (0, None);
        };
        self.buffer.clear();
        // Serializing a key into memory cannot fail for key types; if it ever did, the
        // record goes to subtask 0, whose state backend fails the job on the same key.
        if self.serializer.serialize(&key, &mut self.buffer).is_err() {
            return (0, None);
        }
        let group = key_group_for_bytes(self.buffer.as_slice(), self.max_parallelism);
        let subtask = subtask_for_key_group(self.max_parallelism, self.parallelism, group);
        (subtask as usize, Some(group))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

    use timely::progress::Stamp;
    use typeinfo::{SerializerConfig, TypeInfo};

    use super::*;
    use crate::operator::element::NO_TIMESTAMP;

    /// Keeps what is pushed to it.
    #[derive(Default)]
    struct Kept(Vec<Msg<(u64, String)>>);

    impl Push<Message<Time, Batch<(u64, String)>>> for Kept {
        fn push(&mut self, element: &mut Option<Message<Time, Batch<(u64, String)>>>) {
            if let Some(message) = element.take() {
                self.0.extend(message.data.msgs);
            }
        }
    }

    fn distributor(route: Route<(u64, String)>, targets: usize) -> EdgeDistributor<(u64, String)> {
        let serializer = Arc::new(
            <(u64, String)>::create_serializer(&SerializerConfig::default()).expect("serializer"),
        );
        EdgeDistributor::new(route, serializer, 0, targets, targets)
    }

    fn by_key(parallelism: u32) -> Route<(u64, String)> {
        Route::Hash(Box::new(KeyGroupRouter::<(u64, String), u64> {
            selector: KeyOf::Every(Arc::new(|r: &(u64, String)| r.0)),
            serializer: u64::create_serializer(&SerializerConfig::default()).expect("serializer"),
            buffer: DataOutputView::new(),
            parallelism,
            max_parallelism: 128,
        }))
    }

    /// Sends records `0..n` (each carrying a stale key group) through `d` to `targets` kept
    /// pushers; what each target got.
    fn send(d: &mut EdgeDistributor<(u64, String)>, targets: usize, n: u64) -> Vec<Kept> {
        let mut pushers: Vec<Kept> = (0..targets).map(|_| Kept::default()).collect();
        let mut batch = Batch::of(
            (0..n)
                .map(|k| Msg::Record {
                    ts: NO_TIMESTAMP,
                    value: (k, format!("r{k}")),
                    key_group: Some(7),
                })
                .collect(),
        );
        let stamp: Stamp<Time> = Stamp::default();
        d.partition(&mut batch, &stamp, &mut pushers);
        d.flush(&stamp, &mut pushers);
        pushers
    }

    fn group_of(key: u64) -> u16 {
        let mut bytes = DataOutputView::new();
        u64::create_serializer(&SerializerConfig::default())
            .expect("serializer")
            .serialize(&key, &mut bytes)
            .expect("a u64 serializes");
        key_group_for_bytes(bytes.as_slice(), 128)
    }

    #[test]
    fn a_keyed_edge_hands_each_record_its_key_group_with_it() {
        let mut d = distributor(by_key(2), 2);
        let got = send(&mut d, 2, 500);
        let mut seen = 0;
        for (target, kept) in got.iter().enumerate() {
            assert!(!kept.0.is_empty(), "subtask {target} got nothing");
            for msg in &kept.0 {
                let Msg::Record {
                    value, key_group, ..
                } = msg
                else {
                    panic!("only records were sent");
                };
                let group = group_of(value.0);
                assert_eq!(*key_group, Some(group), "record {}", value.0);
                assert_eq!(subtask_for_key_group(128, 2, group) as usize, target);
                seen += 1;
            }
        }
        assert_eq!(seen, 500);
    }

    #[test]
    fn only_a_hash_route_that_hashed_hands_on_a_key_group() {
        // One consumer subtask: nothing hashed, no group (the operator computes it); a
        // rebalancing or broadcasting edge drops the group an earlier exchange computed.
        for (route, targets) in [
            (by_key(1), 1),
            (Route::Rebalance { next: 0 }, 2),
            (Route::Broadcast, 2),
        ] {
            let mut d = distributor(route, targets);
            for kept in send(&mut d, targets, 50) {
                assert!(!kept.0.is_empty());
                assert!(kept.0.iter().all(|m| matches!(
                    m,
                    Msg::Record {
                        key_group: None,
                        ..
                    }
                )));
            }
        }
    }
}
