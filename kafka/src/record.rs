//! A record read from Kafka, and how the source turns it into a stream element
//! ([`RecordDeserializer`]): the value alone ([`ValueOnly`]), key and value together
//! ([`KeyValue`]), or anything a user writes from the whole record.

use typeinfo_runtime::Data;

use crate::format::ValueDeserializer;

/// A record as the source read it (borrowed from the client's buffer).
#[derive(Debug, Clone, Copy)]
pub struct ConsumerRecord<'a> {
    /// The topic.
    pub topic: &'a str,
    /// The partition.
    pub partition: i32,
    /// The offset.
    pub offset: i64,
    /// The record's Kafka timestamp (create or log-append time), in ms since the epoch.
    pub timestamp: Option<i64>,
    /// The key, if the record has one.
    pub key: Option<&'a [u8]>,
    /// The value; `None` for a tombstone.
    pub value: Option<&'a [u8]>,
}

/// A record that did not deserialize, as the source hands it to the side output
/// [`BadRecord::tag`] with [`OnDeserializationError::SideOutput`](crate::OnDeserializationError::SideOutput):
/// where it was, its bytes and why it was refused.
#[derive(typeinfo::TypeInfo, Debug, Clone, PartialEq, Eq)]
pub struct BadRecord {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset.
    pub offset: i64,
    /// The record's Kafka timestamp, in ms since the epoch.
    pub timestamp: Option<i64>,
    /// The key, if the record has one.
    pub key: Option<Vec<u8>>,
    /// The value; `None` for a tombstone.
    pub value: Option<Vec<u8>>,
    /// What the deserializer said.
    pub error: String,
}

impl BadRecord {
    /// The side output of the records that did not deserialize: read it with
    /// `stream.side_output(&BadRecord::tag())` on the source's stream.
    pub fn tag() -> typeinfo_runtime::OutputTag<BadRecord> {
        typeinfo_runtime::OutputTag::new("kafka bad records")
    }

    pub(crate) fn of(record: &ConsumerRecord<'_>, error: String) -> Self {
        BadRecord {
            topic: record.topic.to_owned(),
            partition: record.partition,
            offset: record.offset,
            timestamp: record.timestamp,
            key: record.key.map(<[u8]>::to_vec),
            value: record.value.map(<[u8]>::to_vec),
            error,
        }
    }
}

/// Makes a stream element of a Kafka record (Flink's `KafkaRecordDeserializationSchema`).
pub trait RecordDeserializer: Send + Sync + 'static {
    /// The stream's element type.
    type Output: Data;

    /// The element of `record`.
    ///
    /// # Errors
    ///
    /// The record does not make an element: the message says why (the source adds topic,
    /// partition and offset, then fails or skips the record as configured).
    fn deserialize(&self, record: &ConsumerRecord<'_>) -> Result<Self::Output, String>;
}

/// The record's value alone; a record without a value (a tombstone) does not deserialize.
#[derive(Debug, Clone)]
pub struct ValueOnly<V>(pub V);

impl<V: ValueDeserializer> RecordDeserializer for ValueOnly<V> {
    type Output = V::Value;
    fn deserialize(&self, record: &ConsumerRecord<'_>) -> Result<V::Value, String> {
        let value = record
            .value
            .ok_or("the record has no value (a tombstone)")?;
        self.0.deserialize(value)
    }
}

/// Key and value together: `(Option<key>, value)`, the key `None` when the record has none.
#[derive(Debug, Clone)]
pub struct KeyValue<K, V>(pub K, pub V);

impl<K: ValueDeserializer, V: ValueDeserializer> RecordDeserializer for KeyValue<K, V> {
    type Output = (Option<K::Value>, V::Value);
    fn deserialize(&self, record: &ConsumerRecord<'_>) -> Result<Self::Output, String> {
        let key = match record.key {
            Some(bytes) => Some(self.0.deserialize(bytes).map_err(|e| format!("key: {e}"))?),
            None => None,
        };
        let value = record
            .value
            .ok_or("the record has no value (a tombstone)")?;
        Ok((
            key,
            self.1
                .deserialize(value)
                .map_err(|e| format!("value: {e}"))?,
        ))
    }
}
