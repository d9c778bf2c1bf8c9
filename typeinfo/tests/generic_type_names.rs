//! Serde-bridged types are named in snapshots by a stable name the user gives, not by
//! `std::any::type_name` (which changes between compiler versions and when a module
//! moves); snapshots written before stable names, which hold the `type_name`, still restore.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use typeinfo::{
    kinds, Compatibility, DataOutputView, SerializerConfig, SerializerSnapshot, SnapshotRegistry,
    TypeInfo, TypeSerializer,
};

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Blob {
    a: u32,
    b: bool,
}
typeinfo::generic_type!(Blob, name = "com.example.Blob");

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Moved {
    id: u64,
}
typeinfo::generic_type!(
    Moved,
    name = "com.example.Moved",
    alias = "com.example.OldMoved",
    alias = "old_crate::Moved"
);

/// A serde snapshot as every version writes it: kind `serde`, version 1, the name
/// length-prefixed, nothing nested.
fn serde_snapshot(name: &str) -> SerializerSnapshot {
    let mut payload = DataOutputView::new();
    payload.write_len_prefixed(name.as_bytes());
    SerializerSnapshot::new(kinds::SERDE, 1).with_payload(payload.into_inner())
}

/// The snapshot through its bytes, as a savepoint stores it.
fn stored(snapshot: &SerializerSnapshot) -> SerializerSnapshot {
    SerializerSnapshot::from_bytes(&snapshot.to_bytes().expect("a snapshot writes")).expect("a snapshot reads back")
}

#[test]
fn the_snapshot_holds_the_stable_name() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Blob>()?;
    assert_eq!(s.snapshot(), serde_snapshot("com.example.Blob"));
    assert_eq!(s.snapshot().type_name(), "com.example.Blob");
    assert!(matches!(
        s.resolve(&stored(&s.snapshot()), &SnapshotRegistry::default()),
        Compatibility::AsIs
    ));
    Ok(())
}

#[test]
fn the_bytes_are_unchanged() -> typeinfo::Result<()> {
    // FORMAT.md §2.17: `Blob { a: 300, b: true }` is `03 ac 02 01`.
    let s = typeinfo::serializer::<Blob>()?;
    assert_eq!(
        typeinfo::to_bytes(&s, &Blob { a: 300, b: true })?,
        [0x03, 0xac, 0x02, 0x01]
    );
    Ok(())
}

#[test]
fn an_old_snapshot_holding_todays_type_name_is_compatible() -> typeinfo::Result<()> {
    // Written by a version before stable names: the payload is `std::any::type_name`.
    let old = stored(&serde_snapshot(std::any::type_name::<Blob>()));
    let s = typeinfo::serializer::<Blob>()?;
    assert!(matches!(
        s.resolve(&old, &SnapshotRegistry::default()),
        Compatibility::AsIs
    ));
    Ok(())
}

#[test]
fn an_old_snapshot_of_another_type_is_incompatible() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Blob>()?;
    for old in [
        serde_snapshot("some_crate::Other"),
        serde_snapshot("com.example.Other"),
        serde_snapshot(std::any::type_name::<Moved>()),
    ] {
        let verdict = s.resolve(&stored(&old), &SnapshotRegistry::default());
        let inc = verdict
            .incompatibility()
            .expect("another serde type is incompatible");
        assert!(inc.to_string().contains("cannot evolve"), "{inc}");
    }
    Ok(())
}

#[test]
fn aliases_name_the_type_in_older_snapshots() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Moved>()?;
    for old in [
        "com.example.Moved",
        "com.example.OldMoved",
        "old_crate::Moved",
        std::any::type_name::<Moved>(),
    ] {
        let verdict = s.resolve(&stored(&serde_snapshot(old)), &SnapshotRegistry::default());
        assert!(matches!(verdict, Compatibility::AsIs), "{old}: {verdict:?}");
    }
    Ok(())
}

#[test]
fn a_disabled_generic_type_is_named_by_its_rust_type() {
    let err = Blob::create_serializer(&SerializerConfig::new().disable_generic_types())
        .expect_err("disabled");
    assert!(err.to_string().contains("Blob"), "{err}");
}

#[test]
fn a_hand_made_generic_serializer_takes_a_name() -> typeinfo::Result<()> {
    let s = typeinfo::GenericSerializer::<(u8, String)>::new(
        "com.example.Pair",
        &SerializerConfig::new(),
    )?;
    assert_eq!(s.name(), "com.example.Pair");
    assert_eq!(s.snapshot(), serde_snapshot("com.example.Pair"));
    Ok(())
}
