//! A hand-written serializer whose bytes carry their own format version: the path for
//! users who must control their layout byte by byte.
//!
//! `MoneyEvent` is a trade tick: a symbol, a decimal price (scale plus unscaled
//! two's-complement bytes, the layout a money field needs), an event timestamp and, since
//! format version 2, a traded volume. Its serializer
//! - writes a format-version byte first, then the fields;
//! - reads version 1 and version 2 bytes (a version-1 event has no volume), so resolving
//!   against a version-1 snapshot is "compatible as is";
//! - copies serialized bytes without decoding them;
//! - has its own snapshot kind, registered with a restorer so that tools can read its bytes
//!   without this code's types;
//! - passes the conformance harness (run this example: `cargo run -p typeinfo --example money_event`).
//!
//! Layout (`FORMAT.md` conventions: little-endian numbers, LEB128 varints):
//!
//! | bytes | field |
//! |---|---|
//! | 1 | format version: `1` or `2` |
//! | varint + UTF-8 | symbol |
//! | zigzag varint | price scale |
//! | varint + bytes | price unscaled value, big-endian two's complement |
//! | 8 | timestamp, milliseconds since the epoch, `i64` |
//! | 8 (version 2) | volume, `u64` |

use std::sync::Arc;

use rust_decimal::Decimal;
use typeinfo::{
    Compatibility, DataInputView, DataOutputView, Error, Incompatibility, RestoredSerializer,
    Result, RustDecimalSerializer, SerializerSnapshot, SnapshotRegistry, TypeSerializer, Value,
};

/// A trade tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoneyEvent {
    /// The instrument, e.g. `EURUSD`.
    pub symbol: String,
    /// The price.
    pub price: Decimal,
    /// Event time, milliseconds since the epoch.
    pub timestamp_ms: i64,
    /// Traded volume; `None` for events written in format version 1.
    pub volume: Option<u64>,
}

/// The snapshot kind of [`MoneyEventSerializer`].
pub const MONEY_EVENT_KIND: &str = "example.money_event";
/// The format version this code writes.
pub const MONEY_EVENT_VERSION: u8 = 2;

/// Serializes [`MoneyEvent`] in format version 2 (or 1, for tests and old writers).
#[derive(Debug, Clone, Copy)]
pub struct MoneyEventSerializer {
    version: u8,
}

impl Default for MoneyEventSerializer {
    fn default() -> Self {
        Self {
            version: MONEY_EVENT_VERSION,
        }
    }
}

impl MoneyEventSerializer {
    /// The serializer as version 1 of this code wrote it (no volume).
    pub fn version_1() -> Self {
        Self { version: 1 }
    }

    /// Registers the restorer of this kind, so snapshots of it can be read without this type.
    pub fn register(registry: &mut SnapshotRegistry) {
        registry.register(MONEY_EVENT_KIND, |snapshot, _| {
            snapshot.check_version(u32::from(MONEY_EVENT_VERSION))?;
            Ok(Arc::new(RestoredMoneyEvent {
                snapshot: snapshot.clone(),
            }) as RestoredSerializer)
        });
    }
}

fn read_version(input: &mut DataInputView<'_>) -> Result<u8> {
    match input.read_u8()? {
        v @ 1..=MONEY_EVENT_VERSION => Ok(v),
        v => Err(Error::InvalidTag {
            what: "MoneyEvent format version".to_owned(),
            tag: u64::from(v),
        }),
    }
}

/// Moves past the fields after the version byte without decoding them.
fn skip_fields(version: u8, input: &mut DataInputView<'_>) -> Result<()> {
    input.read_len_prefixed()?; // symbol
    RustDecimalSerializer.skip(input)?; // price
    input.skip_bytes(if version >= 2 { 16 } else { 8 }) // timestamp, volume
}

impl TypeSerializer<MoneyEvent> for MoneyEventSerializer {
    #[inline(always)]
    fn serialize(&self, value: &MoneyEvent, out: &mut DataOutputView) -> Result<()> {
        let symbol = value.symbol.as_bytes();
        // One reservation for the whole event (version, symbol with its length, price of at
        // most 18 bytes, timestamp, volume), then writes through a cursor over that room.
        let mut w = out.reserved_writer(1 + 10 + symbol.len() + 18 + 8 + 8);
        w.put_u8(self.version)?;
        w.put_len_prefixed(symbol)?;
        RustDecimalSerializer.put(&value.price, &mut w)?;
        w.put_i64(value.timestamp_ms)?;
        if self.version >= 2 {
            w.put_u64(value.volume.unwrap_or(0))?;
        }
        w.finish();
        Ok(())
    }

    #[inline]
    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<MoneyEvent> {
        let version = read_version(input)?;
        let symbol = std::str::from_utf8(input.read_len_prefixed()?)
            .map_err(|_| Error::InvalidUtf8)?
            .to_owned();
        let price = RustDecimalSerializer.deserialize(input)?;
        let timestamp_ms = input.read_i64()?;
        let volume = if version >= 2 {
            Some(input.read_u64()?)
        } else {
            None
        };
        Ok(MoneyEvent {
            symbol,
            price,
            timestamp_ms,
            volume,
        })
    }

    fn copy(&self, value: &MoneyEvent) -> MoneyEvent {
        value.clone()
    }

    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let version = read_version(input)?;
        skip_fields(version, input)
    }

    /// Copies one event's bytes as they are, whatever their format version.
    fn copy_serialized(
        &self,
        input: &mut DataInputView<'_>,
        out: &mut DataOutputView,
    ) -> Result<()> {
        let start = input.position();
        self.skip(input)?;
        out.write_bytes(input.consumed_since(start));
        Ok(())
    }

    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new(MONEY_EVENT_KIND, u32::from(self.version))
    }

    /// Bytes of any format version up to ours are read as they are; anything else is refused.
    fn resolve(&self, old: &SerializerSnapshot, _: &SnapshotRegistry) -> Compatibility<MoneyEvent> {
        let new = self.snapshot();
        if old.kind() != MONEY_EVENT_KIND {
            return Compatibility::Incompatible(Incompatibility::between(old, &new));
        }
        if old.version() == 0 || old.version() > u32::from(self.version) {
            return Compatibility::Incompatible(Incompatibility::between(old, &new).with_detail(
                format!(
                    "format version {} is newer than {}",
                    old.version(),
                    self.version
                ),
            ));
        }
        Compatibility::AsIs
    }
}

/// Reads money events into [`Value`]s, for tools that have the snapshot but not this code.
#[derive(Debug)]
struct RestoredMoneyEvent {
    snapshot: SerializerSnapshot,
}

impl TypeSerializer<Value> for RestoredMoneyEvent {
    fn serialize(&self, value: &Value, out: &mut DataOutputView) -> Result<()> {
        let field = |name: &str| {
            value
                .field(name)
                .ok_or_else(|| Error::custom(format!("money event without `{name}`")))
        };
        let (Value::String(symbol), Value::Decimal { scale, unscaled }, Value::I64(ts)) =
            (field("symbol")?, field("price")?, field("timestamp_ms")?)
        else {
            return Err(Error::custom(format!("{value:?} is not a money event")));
        };
        let volume = match value.field("volume") {
            Some(Value::U64(v)) => Some(*v),
            _ => None,
        };
        out.write_u8(if volume.is_some() { 2 } else { 1 });
        out.write_len_prefixed(symbol.as_bytes());
        out.write_varint_signed(*scale);
        out.write_len_prefixed(unscaled);
        out.write_i64(*ts);
        if let Some(v) = volume {
            out.write_u64(v);
        }
        Ok(())
    }

    fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<Value> {
        let version = read_version(input)?;
        let symbol = std::str::from_utf8(input.read_len_prefixed()?)
            .map_err(|_| Error::InvalidUtf8)?
            .to_owned();
        let scale = input.read_varint_signed()?;
        let unscaled = input.read_len_prefixed()?.to_vec();
        if unscaled.is_empty() {
            return Err(Error::OutOfRange {
                what: "MoneyEvent.price".to_owned(),
                detail: "empty unscaled value".to_owned(),
            });
        }
        let mut fields = vec![
            ("symbol".into(), Value::String(symbol)),
            ("price".into(), Value::Decimal { scale, unscaled }),
            ("timestamp_ms".into(), Value::I64(input.read_i64()?)),
        ];
        if version >= 2 {
            fields.push(("volume".into(), Value::U64(input.read_u64()?)));
        }
        Ok(Value::Struct {
            name: "MoneyEvent".into(),
            fields,
        })
    }

    fn copy(&self, value: &Value) -> Value {
        value.clone()
    }

    fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        let version = read_version(input)?;
        skip_fields(version, input)
    }

    fn snapshot(&self) -> SerializerSnapshot {
        self.snapshot.clone()
    }
}

/// Sample events, as the harness and benchmarks use them.
pub fn sample_events() -> Vec<MoneyEvent> {
    vec![
        MoneyEvent {
            symbol: "EURUSD".to_owned(),
            price: Decimal::new(108_375, 5),
            timestamp_ms: 1_700_000_000_123,
            volume: Some(1_000_000),
        },
        MoneyEvent {
            symbol: "BTC-USD".to_owned(),
            price: Decimal::new(-3_712_450_000, 4),
            timestamp_ms: -1,
            volume: Some(0),
        },
        MoneyEvent {
            symbol: String::new(),
            price: Decimal::ZERO,
            timestamp_ms: 0,
            volume: Some(u64::MAX),
        },
    ]
}

#[allow(dead_code)]
fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut registry = SnapshotRegistry::default();
    MoneyEventSerializer::register(&mut registry);

    typeinfo::testing::Conformance::new(MoneyEventSerializer::default(), sample_events())
        .registry(registry.clone())
        .run()?;
    println!("MoneyEventSerializer passes the conformance harness");

    // Bytes written by version 1 of this code are read by today's serializer as they are.
    let old = MoneyEventSerializer::version_1();
    let event = MoneyEvent {
        volume: None,
        ..sample_events()[0].clone()
    };
    let bytes = typeinfo::to_bytes(&old, &event)?;
    let today = MoneyEventSerializer::default();
    println!(
        "v1 -> v2: {:?}",
        today.resolve(&old.snapshot(), &registry).verdict()
    );
    println!("read v1 bytes: {:?}", typeinfo::from_bytes(&today, &bytes)?);
    Ok(())
}
