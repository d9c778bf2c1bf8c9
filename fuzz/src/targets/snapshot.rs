//! Serializer snapshots from outside: the standalone envelope (`TISS`), the restore of a
//! type-free reader from it, and the resolution of today's serializer against it (with the
//! migration reader reading values). A snapshot that reads must write back the same; a
//! reader restored from it must read (or refuse) values without panicking; whatever reads
//! must re-serialize and read back the same.

use std::collections::BTreeMap;
use std::fmt::Debug;

use typeinfo::{
    Compatibility, DataInputView, SerializerSnapshot, SnapshotRegistry, TypeInfo, TypeSerializer,
};

use crate::harness::{Outcome, Sub};
use crate::mutate::Nest;
use crate::targets::derived::{Doc, Event, Folder, Tree};
use crate::targets::evolution::{v1, v2};
use crate::targets::typed::{check_restored, round_trip};
use crate::values::{Arb, Gen};

/// Values of each type the corrupt snapshot's readers try.
const VALUES: usize = 4;

/// Reads `values` with what resolving `s` against `stored` gives.
fn resolve_and_read<T: PartialEq + 'static, S: TypeSerializer<T>>(
    s: &S,
    stored: &SerializerSnapshot,
    registry: &SnapshotRegistry,
    values: &[Vec<u8>],
) -> Result<(), String> {
    let read = |f: &dyn Fn(&mut DataInputView<'_>) -> typeinfo::Result<T>| -> Result<(), String> {
        for v in values {
            if let Ok(x) = f(&mut DataInputView::new(v)) {
                round_trip(s, &x, "resolved")?;
            }
        }
        Ok(())
    };
    match s.resolve(stored, registry) {
        Compatibility::AsIs => read(&|i| s.deserialize(i)),
        Compatibility::AfterMigration(reader) => read(&|i| reader.read(i)),
        Compatibility::Reconfigured(r) => read(&|i| r.deserialize(i)),
        Compatibility::Incompatible(inc) => {
            // The message names the path; building it must not fail on a corrupt snapshot.
            let _ = inc.to_string();
            Ok(())
        }
    }
}

fn snapshot_sub<T>(name: &str, g: &mut Gen, nests: &[Nest]) -> Result<Sub, String>
where
    T: TypeInfo + Arb + PartialEq + Debug,
{
    let s = typeinfo::serializer::<T>().map_err(|e| e.to_string())?;
    let mut values: Vec<Vec<u8>> = (0..VALUES)
        .map(|_| typeinfo::to_bytes(&s, &T::arb(g)))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    values.extend(nests.iter().filter_map(|n| n.build(2_000)));
    let seeds = vec![s.snapshot().to_bytes().map_err(|e| e.to_string())?];
    let registry = SnapshotRegistry::default();
    Ok(Sub::new(name, seeds, move |bytes| {
        let Ok(stored) = SerializerSnapshot::from_bytes(bytes) else {
            return Ok(Outcome::Error);
        };
        let again = stored
            .to_bytes()
            .map_err(|e| format!("a snapshot that was read cannot be written: {e}"))?;
        match SerializerSnapshot::from_bytes(&again) {
            Ok(back) if back == stored => {}
            Ok(_) => {
                return Err("a snapshot read back as another snapshot after writing".to_owned())
            }
            Err(e) => {
                return Err(format!(
                    "a snapshot that was read does not read back after writing: {e}"
                ))
            }
        }
        let _ = stored.type_name();
        if let Ok(restored) = registry.restore(&stored) {
            for v in &values {
                check_restored(&restored, v)?;
                let _ = restored.skip(&mut DataInputView::new(v));
            }
        }
        resolve_and_read(&s, &stored, &registry, &values)?;
        Ok(Outcome::Value)
    }))
}

/// Builds the sub-targets.
pub fn build(g: &mut Gen) -> Result<Vec<Sub>, String> {
    let mut leaf = vec![0];
    leaf.extend_from_slice(&7i64.to_le_bytes());
    let tree = [Nest {
        open: vec![1],
        leaf: leaf.clone(),
        close: leaf,
    }];
    let doc = [Nest {
        open: vec![3, 1],
        leaf: vec![0],
        close: vec![],
    }];
    Ok(vec![
        snapshot_sub::<u32>("u32", g, &[])?,
        snapshot_sub::<String>("String", g, &[])?,
        snapshot_sub::<Vec<i64>>("Vec<i64>", g, &[])?,
        snapshot_sub::<Vec<()>>("Vec<()>", g, &[])?,
        snapshot_sub::<[(); 8]>("[(); 8]", g, &[])?,
        snapshot_sub::<[u16; 3]>("[u16; 3]", g, &[])?,
        snapshot_sub::<Option<Vec<String>>>("Option<Vec<String>>", g, &[])?,
        snapshot_sub::<(u8, String, Option<f64>)>("(u8, String, Option<f64>)", g, &[])?,
        snapshot_sub::<BTreeMap<String, Vec<u8>>>("BTreeMap<String, Vec<u8>>", g, &[])?,
        snapshot_sub::<std::collections::HashSet<u64>>("HashSet<u64>", g, &[])?,
        snapshot_sub::<std::time::Duration>("Duration", g, &[])?,
        snapshot_sub::<rust_decimal::Decimal>("Decimal", g, &[])?,
        snapshot_sub::<Tree>("Tree", g, &tree)?,
        snapshot_sub::<Doc>("Doc", g, &doc)?,
        snapshot_sub::<Folder>("Folder", g, &[])?,
        snapshot_sub::<Event>("Event", g, &[])?,
        snapshot_sub::<v1::Order>("Order v1", g, &[])?,
        snapshot_sub::<v1::Status>("Status v1", g, &[])?,
        snapshot_sub::<v1::Chain>("Chain v1", g, &[])?,
        snapshot_sub::<crate::targets::builtin::Legacy>("Legacy (serde)", g, &[])?,
        // Snapshots read with the serializer of a later version: resolution sees old shapes.
        snapshot_resolved_as::<v1::Order, v2::Order>("Order v1 as v2", g)?,
        snapshot_resolved_as::<v1::Status, v2::Status>("Status v1 as v2", g)?,
        snapshot_resolved_as::<v1::Chain, v2::Chain>("Chain v1 as v2", g)?,
    ])
}

/// Like [`snapshot_sub`], with `Old`'s snapshot and values resolved by `New`'s serializer.
fn snapshot_resolved_as<Old, New>(name: &str, g: &mut Gen) -> Result<Sub, String>
where
    Old: TypeInfo + Arb,
    New: TypeInfo + PartialEq + 'static,
{
    let old = typeinfo::serializer::<Old>().map_err(|e| e.to_string())?;
    let new = typeinfo::serializer::<New>().map_err(|e| e.to_string())?;
    let values: Vec<Vec<u8>> = (0..VALUES)
        .map(|_| typeinfo::to_bytes(&old, &Old::arb(g)))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let seeds = vec![old.snapshot().to_bytes().map_err(|e| e.to_string())?];
    let registry = SnapshotRegistry::default();
    Ok(Sub::new(name, seeds, move |bytes| {
        let Ok(stored) = SerializerSnapshot::from_bytes(bytes) else {
            return Ok(Outcome::Error);
        };
        resolve_and_read(&new, &stored, &registry, &values)?;
        Ok(Outcome::Value)
    }))
}
