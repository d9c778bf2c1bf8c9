//! The hand-written `MoneyEvent` serializer of `examples/money_event.rs`: the harness, its
//! format versions, its byte-level copy and its compatibility logic.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

#[path = "../examples/money_event.rs"]
mod money_event;

use money_event::*;
use typeinfo::testing::Conformance;
use typeinfo::{
    from_bytes, to_bytes, DataInputView, DataOutputView, SerializerSnapshot, SnapshotRegistry,
    TypeSerializer, Value, Verdict,
};

fn registry() -> SnapshotRegistry {
    let mut registry = SnapshotRegistry::default();
    MoneyEventSerializer::register(&mut registry);
    registry
}

#[test]
fn both_format_versions_pass_the_harness() -> Result<(), typeinfo::testing::ConformanceError> {
    Conformance::new(MoneyEventSerializer::default(), sample_events())
        .registry(registry())
        .run()?;
    let v1_events = sample_events()
        .into_iter()
        .map(|e| MoneyEvent { volume: None, ..e })
        .collect();
    Conformance::new(MoneyEventSerializer::version_1(), v1_events)
        .registry(registry())
        .run()
}

#[test]
fn version_1_bytes_are_read_as_they_are() -> typeinfo::Result<()> {
    let old = MoneyEventSerializer::version_1();
    let event = MoneyEvent {
        volume: None,
        ..sample_events()[0].clone()
    };
    let bytes = to_bytes(&old, &event)?;
    assert_eq!(bytes[0], 1, "the first byte is the format version");
    let today = MoneyEventSerializer::default();
    assert_eq!(
        today.resolve(&old.snapshot(), &registry()).verdict(),
        Verdict::AsIs
    );
    assert_eq!(from_bytes(&today, &bytes)?, event);
    Ok(())
}

#[test]
fn newer_versions_and_other_kinds_are_refused() {
    let today = MoneyEventSerializer::default();
    let newer = SerializerSnapshot::new(MONEY_EVENT_KIND, 3);
    let inc = today.resolve(&newer, &registry());
    assert!(
        inc.incompatibility()
            .is_some_and(|i| i.to_string().contains("format version 3 is newer than 2")),
        "{inc:?}"
    );
    assert_eq!(
        today
            .resolve(&SerializerSnapshot::new("string", 1), &registry())
            .verdict(),
        Verdict::Incompatible
    );
    assert!(
        from_bytes(&today, &[3]).is_err(),
        "an unknown format version byte is refused"
    );
}

#[test]
fn copy_serialized_moves_bytes_of_either_version_untouched() -> typeinfo::Result<()> {
    let mut stream = DataOutputView::new();
    MoneyEventSerializer::version_1().serialize(
        &MoneyEvent {
            volume: None,
            ..sample_events()[1].clone()
        },
        &mut stream,
    )?;
    MoneyEventSerializer::default().serialize(&sample_events()[0], &mut stream)?;
    let mut input = DataInputView::new(stream.as_slice());
    let mut copied = DataOutputView::new();
    let s = MoneyEventSerializer::default();
    s.copy_serialized(&mut input, &mut copied)?;
    s.copy_serialized(&mut input, &mut copied)?;
    assert!(input.is_empty());
    assert_eq!(copied.as_slice(), stream.as_slice());
    Ok(())
}

#[test]
fn the_registry_reads_money_events_without_the_type() -> typeinfo::Result<()> {
    let s = MoneyEventSerializer::default();
    let bytes = to_bytes(&s, &sample_events()[0])?;
    let restored = registry().restore(&s.snapshot())?;
    let value = from_bytes(&restored, &bytes)?;
    assert_eq!(
        value.field("symbol"),
        Some(&Value::String("EURUSD".to_owned()))
    );
    assert_eq!(value.field("volume"), Some(&Value::U64(1_000_000)));
    Ok(())
}
