//! What travels on the edges between operators: records with their event timestamps and
//! in-band watermarks, in batches (how an edge routes them to the next operator's subtasks is
//! [`crate::exec::channel`]'s).
//!
//! Inside a process a batch moves between workers as Rust values (timely's typed channels,
//! no copy of the records). Between processes a batch is written with the records' own
//! serializers in the layout of this crate's `FORMAT.md`: the distributor of an edge, built
//! with the serializer of the edge's record type (the job's serializer config applied),
//! hands it to every batch it sends, and the receiving operator decodes the bytes with its
//! own input serializer. Timely's `ContainerBytes` has no context, so the bytes stay
//! undecoded inside the batch until the operator that owns the serializer reads them.

use std::cell::Cell;
use std::fmt;
use std::io::Write;
use std::sync::Arc;

use timely::container::{Accountable, DrainContainer, PushInto, SizableContainer};
use timely::dataflow::channels::ContainerBytes;
use typeinfo::{DataInputView, DataOutputView, TypeInfo, TypeSerializer};

use crate::types::Data;

/// The event timestamp of a record that has none.
pub(crate) const NO_TIMESTAMP: i64 = i64::MIN;

/// The records a batch holds before it is sent on.
pub(crate) const BATCH_CAPACITY: usize = 1024;

/// One element on an edge.
#[derive(Debug, Clone)]
pub(crate) enum Msg<T> {
    /// A record and its event timestamp ([`NO_TIMESTAMP`] when it has none).
    ///
    /// `key_group`: the key group of the record's key, when the exchange before the receiving
    /// operator computed it to route the record (a keyed edge into more than one subtask); the
    /// keyed operator hands it to its state backend instead of hashing the key again. It
    /// lives in memory only: a batch written for another process does not carry it, and the
    /// receiver computes the group itself (bytes from outside the process do not tell a
    /// backend where a key's state belongs).
    Record {
        ts: i64,
        value: T,
        key_group: Option<u16>,
    },
    /// A watermark from one sending subtask (see [`sender_id`]).
    Watermark { from: u32, watermark: i64 },
    /// The sending subtask is idle: it holds back no watermark until its next one (Flink's
    /// `WatermarkStatus.IDLE`).
    Idle { from: u32 },
}

/// The id of a sending subtask in watermarks: its node and subtask index.
pub(crate) fn sender_id(node: usize, subtask: usize) -> u32 {
    ((node as u32) << 16) | subtask as u32
}

/// The elements of an output buffer, to ship as a batch, leaving the buffer empty with room
/// for as many: the next batch of a busy output is written without growing (a buffer grown
/// from empty by doubling moves every element once more, and its reallocations were a few
/// percent of a source-bound job).
pub(crate) fn take_msgs<T>(msgs: &mut Vec<Msg<T>>) -> Vec<Msg<T>> {
    let room = msgs.len();
    std::mem::replace(msgs, Vec::with_capacity(room))
}

/// A batch of elements: timely's container for every edge of a job.
pub(crate) struct Batch<T: TypeInfo> {
    pub(crate) msgs: Vec<Msg<T>>,
    /// Set when bytes from another process could not be decoded: the receiving operator
    /// fails the job with it. `count` keeps timely's record accounting exact.
    pub(crate) corrupt: Option<(String, i64)>,
    /// Bytes from another process, decoded by the receiving operator with its serializer
    /// ([`Batch::decode_received`]); the element count read from their header.
    pub(crate) received: Option<(timely::bytes::arc::Bytes, i64)>,
    /// The serializer that writes the batch for another process (given by the sending
    /// edge's distributor).
    pub(crate) serializer: Option<Arc<T::Serializer>>,
    /// The wire bytes, encoded once when timely asks for their length and taken when it
    /// writes them (timely asks for both, one after the other).
    pub(crate) wire: Cell<Option<Vec<u8>>>,
}

impl<T: TypeInfo> Batch<T> {
    /// A batch of `msgs`.
    pub(crate) fn of(msgs: Vec<Msg<T>>) -> Self {
        Batch {
            msgs,
            corrupt: None,
            received: None,
            serializer: None,
            wire: Cell::new(None),
        }
    }

    /// A batch of `msgs` that is written with `serializer` if it leaves the process.
    pub(crate) fn with_serializer(msgs: Vec<Msg<T>>, serializer: Arc<T::Serializer>) -> Self {
        Batch {
            serializer: Some(serializer),
            ..Batch::of(msgs)
        }
    }

    /// A batch that stands for `count` elements that could not be decoded.
    pub(crate) fn corrupt(message: String, count: i64) -> Self {
        Batch {
            corrupt: Some((message, count)),
            ..Batch::of(Vec::new())
        }
    }

    /// Decodes bytes received from another process with `serializer` (the receiving
    /// operator's input serializer); a batch made in this process is left as it is.
    ///
    /// # Errors
    ///
    /// Bytes that do not decode, and a batch that arrived corrupt: the message names why.
    pub(crate) fn decode_received(&mut self, serializer: &T::Serializer) -> Result<(), String>
    where
        T: Data,
    {
        if let Some((message, _)) = self.corrupt.take() {
            return Err(message);
        }
        if let Some((bytes, _)) = self.received.take() {
            self.msgs = Batch::decode_body(wire_body(&bytes)?, serializer).map_err(|(m, _)| m)?;
        }
        Ok(())
    }
}

/// The body of a batch's wire bytes (after the length word; without padding).
fn wire_body(bytes: &[u8]) -> Result<&[u8], String> {
    let Some((word, rest)) = bytes.split_first_chunk::<8>() else {
        return Err("batch shorter than its length word".into());
    };
    let len = u64::from_le_bytes(*word);
    usize::try_from(len)
        .ok()
        .and_then(|len| rest.get(..len))
        .ok_or_else(|| {
            format!(
                "batch length {len} exceeds the {} bytes received",
                bytes.len()
            )
        })
}

impl<T: TypeInfo> Default for Batch<T> {
    fn default() -> Self {
        Batch::of(Vec::new())
    }
}

impl<T: TypeInfo + Clone> Clone for Batch<T> {
    fn clone(&self) -> Self {
        Batch {
            msgs: self.msgs.clone(),
            corrupt: self.corrupt.clone(),
            received: self.received.clone(),
            serializer: self.serializer.clone(),
            wire: Cell::new(None),
        }
    }
}

impl<T: TypeInfo + fmt::Debug> fmt::Debug for Batch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("msgs", &self.msgs)
            .field("corrupt", &self.corrupt)
            .finish_non_exhaustive()
    }
}

impl<T: TypeInfo> Accountable for Batch<T> {
    fn record_count(&self) -> i64 {
        match (&self.corrupt, &self.received) {
            (Some((_, count)), _) | (None, Some((_, count))) => *count,
            (None, None) => self.msgs.len() as i64,
        }
    }
}

impl<T: TypeInfo> DrainContainer for Batch<T> {
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

impl<T: TypeInfo> SizableContainer for Batch<T> {
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

impl<T: TypeInfo> PushInto<Msg<T>> for Batch<T> {
    fn push_into(&mut self, item: Msg<T>) {
        self.msgs.push(item);
    }
}

const TAG_RECORD: u8 = 0;

const TAG_TIMESTAMPED: u8 = 1;

const TAG_WATERMARK: u8 = 2;

const TAG_IDLE: u8 = 3;

impl<T: Data> Batch<T> {
    /// Writes the batch in the wire layout (without the length word and padding).
    pub(crate) fn encode(&self, out: &mut DataOutputView) -> typeinfo::Result<()> {
        let serializer = self.serializer.as_deref().ok_or_else(|| {
            typeinfo::Error::custom("a batch left its process without its edge's serializer")
        })?;
        let count = u32::try_from(self.msgs.len()).map_err(|_| {
            typeinfo::Error::custom(format!(
                "a batch of {} elements: at most 2^32 - 1 fit its count",
                self.msgs.len()
            ))
        })?;
        out.write_u32(count);
        for msg in &self.msgs {
            // Each record is its own value to the reader (its own zero-sized budget).
            out.reset_zero_sized_budget();
            match msg {
                Msg::Record { ts, value, .. } if *ts == NO_TIMESTAMP => {
                    out.write_u8(TAG_RECORD);
                    serializer.serialize(value, out)?;
                }
                Msg::Record { ts, value, .. } => {
                    out.write_u8(TAG_TIMESTAMPED);
                    out.write_i64(*ts);
                    serializer.serialize(value, out)?;
                }
                Msg::Watermark { from, watermark } => {
                    out.write_u8(TAG_WATERMARK);
                    out.write_u32(*from);
                    out.write_i64(*watermark);
                }
                Msg::Idle { from } => {
                    out.write_u8(TAG_IDLE);
                    out.write_u32(*from);
                }
            }
        }
        Ok(())
    }

    /// Reads the messages of a batch body written by [`encode`](Self::encode) with
    /// `serializer`; every byte must be used.
    pub(crate) fn decode_body(
        bytes: &[u8],
        serializer: &T::Serializer,
    ) -> Result<Vec<Msg<T>>, (String, i64)> {
        let mut input = DataInputView::new(bytes);
        let count = input.read_u32().map_err(|e| (e.to_string(), 0))?;
        let fail = |e: String| (e, i64::from(count));
        // Every message takes at least its tag byte; reserve at most `capacity_for`'s budget
        // up front (a message may take far more memory than that byte) and grow as read.
        let mut msgs = Vec::with_capacity(typeinfo::capacity_for::<Msg<T>>(
            usize::try_from(count)
                .unwrap_or(usize::MAX)
                .min(input.remaining()),
            1,
        ));
        for i in 0..count {
            // Each record is its own read: it gets the whole budget for elements that take no
            // bytes (a batch of many records must not spend one record's allowance).
            input.reset_zero_sized_budget();
            let msg = match input.read_u8().map_err(|e| fail(e.to_string()))? {
                TAG_RECORD => Msg::Record {
                    ts: NO_TIMESTAMP,
                    value: serializer
                        .deserialize(&mut input)
                        .map_err(|e| fail(e.to_string()))?,
                    key_group: None,
                },
                TAG_TIMESTAMPED => {
                    let ts = input.read_i64().map_err(|e| fail(e.to_string()))?;
                    Msg::Record {
                        ts,
                        value: serializer
                            .deserialize(&mut input)
                            .map_err(|e| fail(e.to_string()))?,
                        key_group: None,
                    }
                }
                TAG_WATERMARK => {
                    let from = input.read_u32().map_err(|e| fail(e.to_string()))?;
                    Msg::Watermark {
                        from,
                        watermark: input.read_i64().map_err(|e| fail(e.to_string()))?,
                    }
                }
                TAG_IDLE => Msg::Idle {
                    from: input.read_u32().map_err(|e| fail(e.to_string()))?,
                },
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
        Ok(msgs)
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
    /// Keeps the bytes for the receiving operator, which decodes them with its serializer;
    /// only the element count is read here (timely's progress accounting needs it now).
    fn from_bytes(bytes: timely::bytes::arc::Bytes) -> Self {
        let count = match wire_body(&bytes) {
            Err(message) => return Batch::corrupt(message, 0),
            Ok(body) => match body.first_chunk::<4>() {
                Some(word) => i64::from(u32::from_le_bytes(*word)),
                None => return Batch::corrupt("batch without its element count".into(), 0),
            },
        };
        Batch {
            received: Some((bytes, count)),
            ..Batch::of(Vec::new())
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

#[cfg(test)]
mod tests {
    use super::*;
    use typeinfo::SerializerConfig;

    fn serializer() -> Arc<<String as TypeInfo>::Serializer> {
        Arc::new(String::create_serializer(&SerializerConfig::default()).expect("serializer"))
    }

    /// What the receiving operator does with bytes from another process.
    fn receive(bytes: Vec<u8>) -> Result<Batch<String>, (String, i64)> {
        let mut batch =
            Batch::<String>::from_bytes(timely::bytes::arc::BytesMut::from(bytes).freeze());
        let count = batch.record_count();
        match batch.decode_received(&serializer()) {
            Ok(()) => Ok(batch),
            Err(message) => Err((message, count)),
        }
    }

    fn example() -> Batch<String> {
        Batch::with_serializer(
            vec![
                Msg::Record {
                    ts: NO_TIMESTAMP,
                    value: "ab".to_owned(),
                    key_group: None,
                },
                Msg::Record {
                    ts: 5,
                    value: "c".to_owned(),
                    key_group: None,
                },
                Msg::Watermark {
                    from: sender_id(1, 2),
                    watermark: 4,
                },
            ],
            serializer(),
        )
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
            same(&receive(golden).expect("golden batch reads"), &example()),
            "v1 bytes still read"
        );
    }

    /// A key group handed on in memory is not written: the layout is the same bytes, and the
    /// receiver reads records without one (it computes its key's group itself).
    #[test]
    fn a_records_key_group_does_not_leave_the_process() {
        let mut grouped = example();
        for msg in &mut grouped.msgs {
            if let Msg::Record { key_group, .. } = msg {
                *key_group = Some(17);
            }
        }
        let bytes = wire(&grouped);
        assert_eq!(bytes, wire(&example()));
        let back = receive(bytes).expect("round trip");
        assert!(back.msgs.iter().all(|m| !matches!(
            m,
            Msg::Record {
                key_group: Some(_),
                ..
            }
        )));
        assert!(same(&back, &example()));
    }

    #[test]
    fn batches_round_trip_and_corrupt_bytes_become_an_error_not_a_panic() {
        let bytes = wire(&example());
        let back = receive(bytes.clone()).expect("round trip");
        assert!(same(&back, &example()));
        for cut in 0..bytes.len() - 8 {
            let mut truncated = bytes.clone();
            truncated.truncate(cut);
            // A length word that claims more than arrived, or a body cut short.
            assert!(receive(truncated).is_err(), "cut at {cut}");
        }
        let mut bad_tag = bytes.clone();
        bad_tag[12] = 9;
        let (msg, count) = receive(bad_tag).expect_err("unknown tag");
        assert!(msg.contains("unknown tag 9"), "{msg}");
        assert_eq!(count, 3, "the record count stays what the sender counted");
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;
    use typeinfo::SerializerConfig;

    #[test]
    fn each_record_of_a_batch_has_its_own_zero_sized_budget() {
        // 8 records of 2^17 units each: more than one view's budget in all, within it each.
        let per_record = typeinfo::MAX_ZERO_SIZED_ITEMS / 2;
        let serializer = Arc::new(
            <Vec<()>>::create_serializer(&SerializerConfig::default()).expect("serializer"),
        );
        let msgs: Vec<Msg<Vec<()>>> = (0..8)
            .map(|_| Msg::Record {
                ts: NO_TIMESTAMP,
                value: vec![(); per_record],
                key_group: None,
            })
            .collect();
        let mut bytes = Vec::new();
        Batch::with_serializer(msgs, Arc::clone(&serializer)).into_bytes(&mut bytes);
        let mut received =
            Batch::<Vec<()>>::from_bytes(timely::bytes::arc::BytesMut::from(bytes).freeze());
        received
            .decode_received(&serializer)
            .expect("every record reads");
        assert_eq!(received.msgs.len(), 8);
    }
}

#[cfg(test)]
mod serializer_tests {
    use super::*;

    #[test]
    fn a_batch_without_its_edges_serializer_is_refused_by_the_receiver_not_lost() {
        let batch = Batch::<String>::of(vec![Msg::Record {
            ts: NO_TIMESTAMP,
            value: "x".to_owned(),
            key_group: None,
        }]);
        let mut bytes = Vec::new();
        batch.into_bytes(&mut bytes);
        let mut received =
            Batch::<String>::from_bytes(timely::bytes::arc::BytesMut::from(bytes).freeze());
        assert_eq!(received.record_count(), 1, "the sender's count is kept");
        let serializer =
            String::create_serializer(&typeinfo::SerializerConfig::default()).expect("serializer");
        assert!(received.decode_received(&serializer).is_err());
    }
}
