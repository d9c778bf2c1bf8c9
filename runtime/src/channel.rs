//! What travels on the edges between operators: records with their event timestamps and
//! in-band watermarks, in batches, routed by key group, round robin, broadcast or forward.
//!
//! Inside a process a batch moves between workers as Rust values (timely's typed channels,
//! no copy of the records). Between processes a batch is written with the records' own
//! serializers in the layout of this crate's `FORMAT.md`.

use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::rc::Rc;
use std::sync::Arc;

use timely::communication::{Pull, Push};
use timely::container::{Accountable, DrainContainer, PushInto, SizableContainer};
use timely::dataflow::channels::pact::{DistributorPact, ParallelizationContract, Pipeline};
use timely::dataflow::channels::pushers::exchange::Distributor;
use timely::dataflow::channels::{ContainerBytes, Message, Stamp};
use timely::logging::TimelyLogger;
use timely::worker::Worker;
use typeinfo::{DataInputView, DataOutputView, SerializerConfig, TypeInfo, TypeSerializer};

use crate::Data;

/// The timely timestamp of every record: the checkpoint epoch it belongs to.
pub(crate) type Epoch = u64;

/// The event timestamp of a record that has none.
pub(crate) const NO_TIMESTAMP: i64 = i64::MIN;

/// The records a batch holds before it is sent on.
const BATCH_CAPACITY: usize = 1024;

/// One element on an edge.
#[derive(Debug, Clone)]
pub(crate) enum Msg<T> {
    /// A record and its event timestamp ([`NO_TIMESTAMP`] when it has none).
    Record { ts: i64, value: T },
    /// A watermark from one sending subtask (see [`sender_id`]).
    Watermark { from: u32, watermark: i64 },
}

/// The id of a sending subtask in watermarks: its node and subtask index.
pub(crate) fn sender_id(node: usize, subtask: usize) -> u32 {
    ((node as u32) << 16) | subtask as u32
}

/// A batch of elements: timely's container for every edge of a job.
pub(crate) struct Batch<T> {
    pub(crate) msgs: Vec<Msg<T>>,
    /// Set when bytes from another process could not be decoded: the receiving operator
    /// fails the job with it. `count` keeps timely's record accounting exact.
    pub(crate) corrupt: Option<(String, i64)>,
    /// The wire bytes, encoded once when timely asks for their length and taken when it
    /// writes them (timely asks for both, one after the other).
    wire: Cell<Option<Vec<u8>>>,
}

impl<T> Batch<T> {
    /// A batch of `msgs`.
    pub(crate) fn of(msgs: Vec<Msg<T>>) -> Self {
        Batch {
            msgs,
            corrupt: None,
            wire: Cell::new(None),
        }
    }

    /// A batch that stands for `count` elements that could not be decoded.
    fn corrupt(message: String, count: i64) -> Self {
        Batch {
            msgs: Vec::new(),
            corrupt: Some((message, count)),
            wire: Cell::new(None),
        }
    }
}

impl<T> Default for Batch<T> {
    fn default() -> Self {
        Batch::of(Vec::new())
    }
}

impl<T: Clone> Clone for Batch<T> {
    fn clone(&self) -> Self {
        Batch {
            msgs: self.msgs.clone(),
            corrupt: self.corrupt.clone(),
            wire: Cell::new(None),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Batch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("msgs", &self.msgs)
            .field("corrupt", &self.corrupt)
            .finish_non_exhaustive()
    }
}

impl<T> Accountable for Batch<T> {
    fn record_count(&self) -> i64 {
        match &self.corrupt {
            Some((_, count)) => *count,
            None => self.msgs.len() as i64,
        }
    }
}

impl<T> DrainContainer for Batch<T> {
    type Item<'a>
        = Msg<T>
    where
        T: 'a;
    type DrainIter<'a>
        = std::vec::Drain<'a, Msg<T>>
    where
        T: 'a;
    fn drain(&mut self) -> Self::DrainIter<'_> {
        self.msgs.drain(..)
    }
}

impl<T> SizableContainer for Batch<T> {
    fn at_capacity(&self) -> bool {
        self.msgs.len() >= BATCH_CAPACITY
    }
    fn ensure_capacity(&mut self, stash: &mut Option<Self>) {
        if self.msgs.capacity() == 0 {
            if let Some(s) = stash.take() {
                self.msgs = s.msgs;
                self.msgs.clear();
            }
            self.msgs.reserve(BATCH_CAPACITY);
        }
    }
}

impl<T> PushInto<Msg<T>> for Batch<T> {
    fn push_into(&mut self, item: Msg<T>) {
        self.msgs.push(item);
    }
}

const TAG_RECORD: u8 = 0;
const TAG_TIMESTAMPED: u8 = 1;
const TAG_WATERMARK: u8 = 2;

thread_local! {
    /// Serializers of the record types this thread writes to or reads from other
    /// processes, registered when the job's graph is built (so the job's serializer config
    /// applies); a type not registered gets its default serializer.
    static WIRE_SERIALIZERS: RefCell<HashMap<TypeId, Rc<dyn Any>>> = RefCell::new(HashMap::new());
}

/// Registers the serializer this thread uses for `T` on the wire.
pub(crate) fn register_wire_serializer<T: TypeInfo>(serializer: T::Serializer) {
    WIRE_SERIALIZERS.with(|m| {
        m.borrow_mut()
            .insert(TypeId::of::<T>(), Rc::new(serializer) as Rc<dyn Any>)
    });
}

fn wire_serializer<T: TypeInfo>() -> typeinfo::Result<Rc<dyn Any>> {
    WIRE_SERIALIZERS.with(|m| {
        if let Some(s) = m.borrow().get(&TypeId::of::<T>()) {
            return Ok(Rc::clone(s));
        }
        let s: Rc<dyn Any> = Rc::new(T::create_serializer(&SerializerConfig::default())?);
        m.borrow_mut().insert(TypeId::of::<T>(), Rc::clone(&s));
        Ok(s)
    })
}

impl<T: Data> Batch<T> {
    /// Writes the batch in the wire layout (without the length word and padding).
    pub(crate) fn encode(&self, out: &mut DataOutputView) -> typeinfo::Result<()> {
        let any = wire_serializer::<T>()?;
        let serializer = any.downcast_ref::<T::Serializer>().ok_or_else(|| {
            typeinfo::Error::custom("the wire serializer is registered for another type")
        })?;
        let count = u32::try_from(self.msgs.len()).map_err(|_| {
            typeinfo::Error::custom(format!(
                "a batch of {} elements: at most 2^32 - 1 fit its count",
                self.msgs.len()
            ))
        })?;
        out.write_u32(count);
        for msg in &self.msgs {
            match msg {
                Msg::Record { ts, value } if *ts == NO_TIMESTAMP => {
                    out.write_u8(TAG_RECORD);
                    serializer.serialize(value, out)?;
                }
                Msg::Record { ts, value } => {
                    out.write_u8(TAG_TIMESTAMPED);
                    out.write_i64(*ts);
                    serializer.serialize(value, out)?;
                }
                Msg::Watermark { from, watermark } => {
                    out.write_u8(TAG_WATERMARK);
                    out.write_u32(*from);
                    out.write_i64(*watermark);
                }
            }
        }
        Ok(())
    }

    /// Reads a batch written by [`encode`](Self::encode); every byte must be used.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, (String, i64)> {
        let mut input = DataInputView::new(bytes);
        let count = input.read_u32().map_err(|e| (e.to_string(), 0))?;
        let fail = |e: String| (e, i64::from(count));
        let any = wire_serializer::<T>().map_err(|e| fail(e.to_string()))?;
        let serializer = any
            .downcast_ref::<T::Serializer>()
            .ok_or_else(|| fail("the wire serializer is registered for another type".into()))?;
        // Every message takes at least its tag byte; reserve at most `capacity_for`'s budget
        // up front (a message may take far more memory than that byte) and grow as read.
        let mut msgs = Vec::with_capacity(typeinfo::capacity_for::<Msg<T>>(
            usize::try_from(count)
                .unwrap_or(usize::MAX)
                .min(input.remaining()),
            1,
        ));
        for i in 0..count {
            let msg = match input.read_u8().map_err(|e| fail(e.to_string()))? {
                TAG_RECORD => Msg::Record {
                    ts: NO_TIMESTAMP,
                    value: serializer
                        .deserialize(&mut input)
                        .map_err(|e| fail(e.to_string()))?,
                },
                TAG_TIMESTAMPED => {
                    let ts = input.read_i64().map_err(|e| fail(e.to_string()))?;
                    Msg::Record {
                        ts,
                        value: serializer
                            .deserialize(&mut input)
                            .map_err(|e| fail(e.to_string()))?,
                    }
                }
                TAG_WATERMARK => {
                    let from = input.read_u32().map_err(|e| fail(e.to_string()))?;
                    Msg::Watermark {
                        from,
                        watermark: input.read_i64().map_err(|e| fail(e.to_string()))?,
                    }
                }
                tag => return Err(fail(format!("element {i} of {count}: unknown tag {tag}"))),
            };
            msgs.push(msg);
        }
        if !input.is_empty() {
            return Err(fail(format!(
                "{} bytes after the last of {count} elements",
                input.remaining()
            )));
        }
        Ok(Batch::of(msgs))
    }

    fn encoded(&self) -> Vec<u8> {
        let mut out = DataOutputView::new();
        match self.encode(&mut out) {
            Ok(()) => out.into_inner(),
            // A serializer that cannot write a value it accepted locally: send a batch the
            // receiver rejects with the reason rather than losing records silently.
            Err(e) => {
                let mut out = DataOutputView::new();
                out.write_u32(u32::try_from(self.msgs.len()).unwrap_or(u32::MAX));
                out.write_u8(0xFF);
                out.write_bytes(e.to_string().as_bytes());
                out.into_inner()
            }
        }
    }
}

impl<T: Data> ContainerBytes for Batch<T> {
    fn from_bytes(bytes: timely::bytes::arc::Bytes) -> Self {
        let slice: &[u8] = &bytes;
        let Some((word, rest)) = slice.split_first_chunk::<8>() else {
            return Batch::corrupt("batch shorter than its length word".into(), 0);
        };
        let len = u64::from_le_bytes(*word);
        let body = usize::try_from(len).ok().and_then(|len| rest.get(..len));
        match body.map(Batch::decode) {
            Some(Ok(batch)) => batch,
            Some(Err((message, count))) => Batch::corrupt(message, count),
            None => Batch::corrupt(
                format!(
                    "batch length {len} exceeds the {} bytes received",
                    slice.len()
                ),
                0,
            ),
        }
    }

    fn length_in_bytes(&self) -> usize {
        let bytes = self.wire.take().unwrap_or_else(|| self.encoded());
        let n = 8 + bytes.len().next_multiple_of(8);
        self.wire.set(Some(bytes));
        n
    }

    #[allow(clippy::expect_used)] // see below: the trait has no error channel
    fn into_bytes<W: Write>(&self, writer: &mut W) {
        let bytes = self.wire.take().unwrap_or_else(|| self.encoded());
        let padding = bytes.len().next_multiple_of(8) - bytes.len();
        // Timely's writers write into memory it sized with `length_in_bytes`, and
        // `ContainerBytes::into_bytes` has no way to report an error: a failed write here is a
        // bug in that contract, not bad input, so it stops the worker loudly.
        writer
            .write_all(&(bytes.len() as u64).to_le_bytes())
            .expect("timely's buffer is sized for the batch");
        writer
            .write_all(&bytes)
            .expect("timely's buffer is sized for the batch");
        writer
            .write_all(&[0u8; 8][..padding])
            .expect("timely's buffer is sized for the batch");
    }
}

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
pub(crate) struct EdgeDistributor<T> {
    route: Route<T>,
    /// This worker's index (the target of forward edges).
    own: usize,
    /// The consumer's parallelism: subtasks `0..targets` run it.
    targets: usize,
    buffers: Vec<Batch<T>>,
}

impl<T: Data> EdgeDistributor<T> {
    pub(crate) fn new(route: Route<T>, own: usize, targets: usize, peers: usize) -> Self {
        EdgeDistributor {
            route,
            own,
            targets,
            buffers: (0..peers).map(|_| Batch::default()).collect(),
        }
    }

    /// Sends `buffer`; a pusher may hand back a sent batch for reuse (the network pushers
    /// hand back the batch they just wrote), so what comes back is emptied.
    fn send<S: Clone, P: Push<Message<S, Batch<T>>>>(
        buffer: &mut Batch<T>,
        stamp: &Stamp<S>,
        pusher: &mut P,
    ) {
        Message::push_at(buffer, stamp.clone(), pusher);
        buffer.msgs.clear();
        buffer.corrupt = None;
        buffer.wire.take();
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
            Self::send(buffer, stamp, &mut pushers[target]);
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
            Self::send(&mut failed, stamp, &mut pushers[self.own]);
        }
        for msg in container.msgs.drain(..) {
            match msg {
                Msg::Watermark { .. } => {
                    for target in 0..self.targets {
                        self.push(target, msg.clone(), stamp, pushers);
                    }
                }
                Msg::Record { ts, value } => match &mut self.route {
                    Route::Hash(router) => {
                        let target = router.route(&value);
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
                Self::send(buffer, stamp, pusher);
            }
        }
    }
}

/// The pact of an edge: a direct pipeline for forward edges between subtasks of the same
/// worker, otherwise an exchange through an [`EdgeDistributor`].
pub(crate) enum EdgePact<T> {
    Pipeline,
    Exchange(Box<dyn FnOnce(usize) -> EdgeDistributor<T>>),
}

impl<T: Data> ParallelizationContract<Epoch, Batch<T>> for EdgePact<T> {
    type Pusher = Box<dyn Push<Message<Epoch, Batch<T>>>>;
    type Puller = Box<dyn Pull<Message<Epoch, Batch<T>>>>;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Batch<String> {
        Batch::of(vec![
            Msg::Record {
                ts: NO_TIMESTAMP,
                value: "ab".to_owned(),
            },
            Msg::Record {
                ts: 5,
                value: "c".to_owned(),
            },
            Msg::Watermark {
                from: sender_id(1, 2),
                watermark: 4,
            },
        ])
    }

    fn hex(bytes: &[u8]) -> String {
        bytes
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn wire(batch: &Batch<String>) -> Vec<u8> {
        let mut bytes = Vec::new();
        batch.into_bytes(&mut bytes);
        assert_eq!(
            bytes.len(),
            batch.length_in_bytes(),
            "timely sizes its buffer with length_in_bytes"
        );
        bytes
    }

    fn same(a: &Batch<String>, b: &Batch<String>) -> bool {
        format!("{:?}", a.msgs) == format!("{:?}", b.msgs)
            && a.corrupt.is_none()
            && b.corrupt.is_none()
    }

    /// The example of `FORMAT.md`, byte for byte, and the committed golden file.
    #[test]
    fn the_wire_layout_is_the_documented_one() {
        let bytes = wire(&example());
        let documented = "20 00 00 00 00 00 00 00 03 00 00 00 00 02 61 62 01 05 00 00 00 00 00 00 00 01 63 02 02 00 01 00 04 00 00 00 00 00 00 00";
        assert_eq!(hex(&bytes), documented);
        let format = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/FORMAT.md"))
            .expect("FORMAT.md");
        assert!(
            format.contains(documented),
            "FORMAT.md shows the example's bytes"
        );
        let golden = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../compat-tests/fixtures/v1/runtime/batch_string.bin"
        ))
        .expect("golden batch");
        assert!(
            same(
                &Batch::<String>::from_bytes(timely::bytes::arc::BytesMut::from(golden).freeze()),
                &example()
            ),
            "v1 bytes still read"
        );
    }

    #[test]
    fn batches_round_trip_and_corrupt_bytes_become_an_error_not_a_panic() {
        let bytes = wire(&example());
        let back =
            Batch::<String>::from_bytes(timely::bytes::arc::BytesMut::from(bytes.clone()).freeze());
        assert!(same(&back, &example()));
        for cut in 0..bytes.len() - 8 {
            let mut truncated = bytes.clone();
            truncated.truncate(cut);
            // A length word that claims more than arrived, or a body cut short.
            let batch =
                Batch::<String>::from_bytes(timely::bytes::arc::BytesMut::from(truncated).freeze());
            assert!(batch.corrupt.is_some(), "cut at {cut}");
        }
        let mut bad_tag = bytes.clone();
        bad_tag[12] = 9;
        let batch =
            Batch::<String>::from_bytes(timely::bytes::arc::BytesMut::from(bad_tag).freeze());
        let (msg, count) = batch.corrupt.expect("unknown tag");
        assert!(msg.contains("unknown tag 9"), "{msg}");
        assert_eq!(count, 3, "the record count stays what the sender counted");
    }
}
