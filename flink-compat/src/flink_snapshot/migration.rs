//! Readers that migrate Flink's old bytes into today's Rust type, for the verdict "after
//! migration" of [`resolve`](crate::resolve): a POJO whose fields were added, removed or
//! renamed (by Java name), and an enum whose constants moved.
//!
//! A POJO is read in the old field order of Flink's snapshot: a field the Rust type still
//! has is read with its serializer (its own layout must be unchanged: a field whose value
//! itself needs migration is refused, naming it), a field it dropped is skipped by its old
//! snapshot ([`skip_value`](crate::skip_value)), and a field Flink's state lacks takes its
//! default (`Option` fields `None`, `#[typeinfo(default)]` fields their default; any other
//! is an error naming the field). A field renamed in Java is, for Flink, one removed and
//! one added: `#[typeinfo(flink_alias = "oldName")]` on the Rust field reads the old
//! field's bytes into it instead.

use std::sync::Arc;

use typeinfo::{
    Compatibility, DataInputView, Error, Incompatibility, MigrationReader, PathSegment, Result,
    Verdict,
};

use crate::flink_snapshot::read::{FlinkSnapshot, SnapshotContent};
use crate::flink_snapshot::resolve::{compare, resolve_as};
use crate::layout::enumeration::FlinkEnum;
use crate::layout::pojo::{self, FlinkPojo};
use crate::{java_io, FlinkType};

/// How to read one field of Flink's old bytes.
#[derive(Debug, Clone)]
pub struct MigrationStep {
    name: String,
    reads: bool,
    snapshot: FlinkSnapshot,
}

impl MigrationStep {
    /// The field's Java name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the new type reads the field (else it is skipped).
    pub fn reads(&self) -> bool {
        self.reads
    }

    /// Skips the field's bytes (its null marker and value).
    ///
    /// # Errors
    ///
    /// Short or corrupt input.
    pub fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
        if java_io::read_bool(input)? {
            Ok(())
        } else {
            crate::flink_snapshot::skip::skip_value(&self.snapshot, input)
        }
    }
}

/// The fields of Flink's old bytes of a POJO, in their order.
#[derive(Debug, Clone)]
pub struct PojoMigration {
    steps: Vec<MigrationStep>,
}

impl PojoMigration {
    /// The steps, one per old field.
    pub fn steps(&self) -> &[MigrationStep] {
        &self.steps
    }
}

/// The error of a field Flink's state lacks and the Rust type cannot default.
pub fn missing_field(class: &str, field: &str) -> Error {
    Error::custom(format!(
        "field `{field}` of Flink POJO `{class}` is not in Flink's state: make it an Option or give it #[typeinfo(default)]"
    ))
}

/// Resolves Flink's snapshot of a POJO against the Rust POJO `T`: as is, after migration
/// (with the reader of Flink's old bytes), or incompatible.
pub fn resolve_pojo<T: FlinkPojo + FlinkType>(old: &FlinkSnapshot) -> Compatibility<T> {
    match resolve_as::<T>(old) {
        Err(inc) => Compatibility::Incompatible(inc),
        Ok(Verdict::AfterMigration) => match pojo_plan::<T>(old) {
            Ok(plan) => {
                let plan = Arc::new(plan);
                Compatibility::AfterMigration(MigrationReader::new(move |input| {
                    if !pojo::read_flags::<T>(input)? {
                        return Err(Error::custom(format!(
                            "Flink POJO `{}`: null where the Rust type is not an Option",
                            T::CLASS_NAME
                        )));
                    }
                    T::read_migrating(&plan, input)
                }))
            }
            Err(inc) => Compatibility::Incompatible(inc),
        },
        Ok(_) => Compatibility::AsIs,
    }
}

fn pojo_plan<T: FlinkPojo>(
    old: &FlinkSnapshot,
) -> std::result::Result<PojoMigration, Incompatibility> {
    let SnapshotContent::Pojo { fields, .. } = &old.content else {
        return Err(Incompatibility::new(old.serializer_name(), T::CLASS_NAME));
    };
    let new_snapshots = T::field_snapshots();
    let mut steps = Vec::with_capacity(fields.len());
    for field in fields {
        let snapshot = field.snapshot.clone().ok_or_else(|| {
            Incompatibility::new(T::CLASS_NAME, T::CLASS_NAME).with_detail(format!(
                "Flink wrote no serializer for field `{}`",
                field.name
            ))
        })?;
        let current = T::FIELD_ALIASES
            .iter()
            .find(|(old, _)| *old == field.name)
            .map_or(field.name.as_str(), |(_, new)| new);
        let new = T::FIELD_NAMES.iter().position(|n| *n == current);
        if let Some(i) = new {
            let new_snapshot = new_snapshots.get(i).ok_or_else(|| {
                Incompatibility::new(T::CLASS_NAME, T::CLASS_NAME)
                    .with_detail("fewer field snapshots than fields")
            })?;
            let verdict = compare(&snapshot, new_snapshot)
                .map_err(|e| e.within(PathSegment::Field(field.name.clone())))?;
            if verdict != Verdict::AsIs {
                return Err(
                    Incompatibility::new(T::CLASS_NAME, T::CLASS_NAME).with_detail(format!(
                        "field `{}` needs a migration of its own, which is not supported yet",
                        field.name
                    )),
                );
            }
        }
        steps.push(MigrationStep {
            name: field.name.clone(),
            reads: new.is_some(),
            snapshot,
        });
    }
    Ok(PojoMigration { steps })
}

/// Resolves Flink's snapshot of an enum against the Rust enum `E`: as is when the old
/// constants keep their ordinals, after migration (by constant name) when they moved,
/// incompatible when one is gone.
pub fn resolve_enum<E: FlinkEnum + FlinkType>(old: &FlinkSnapshot) -> Compatibility<E> {
    match resolve_as::<E>(old) {
        Err(inc) => Compatibility::Incompatible(inc),
        Ok(Verdict::AfterMigration) => {
            let SnapshotContent::Enum { constants, .. } = &old.content else {
                return Compatibility::Incompatible(Incompatibility::new(
                    old.serializer_name(),
                    E::CLASS_NAME,
                ));
            };
            let ordinals: Vec<Option<i32>> = constants
                .iter()
                .map(|c| E::CONSTANTS.iter().position(|n| n == c).map(|i| i as i32))
                .collect();
            Compatibility::AfterMigration(MigrationReader::new(move |input| {
                let old = java_io::read_i32(input)?;
                let new = usize::try_from(old)
                    .ok()
                    .and_then(|i| ordinals.get(i).copied().flatten());
                new.and_then(E::from_ordinal)
                    .ok_or_else(|| Error::InvalidTag {
                        what: format!("enum {} in Flink's old bytes", E::CLASS_NAME),
                        tag: old as u32 as u64,
                    })
            }))
        }
        Ok(_) => Compatibility::AsIs,
    }
}
