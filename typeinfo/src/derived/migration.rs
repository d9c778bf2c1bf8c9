//! Resolving a derived struct or enum against an old snapshot, and the readers that
//! migrate old bytes straight into today's type.
//!
//! A struct's old fields are matched to today's by name or alias. Kept fields resolve with
//! their own serializer (as is, or migrating: widened, nested changes); removed fields are
//! skipped with the serializer restored from their old snapshot; added fields take their
//! default. Values pass between the reading and the building of today's value as
//! `Box<dyn Any>` slots: migration runs once per stored value on restore, and type erasure
//! keeps the generated code to one line per field.

use std::any::Any;
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use typeinfo_serializers::{
    kinds, parse_enum_payload, parse_struct_payload, Compatibility, DataInputView, Error,
    FieldReader, Incompatibility, MigrationReader, PathSegment, RestoredSerializer, Result,
    SerializerSnapshot, SnapshotRegistry, TypeSerializer,
};

use super::schema::{StructSchema, VariantSchema, RECURSIVE};

type Erased = Box<dyn Any + Send>;
type ErasedReader = Arc<dyn Fn(&mut DataInputView<'_>) -> Result<Erased> + Send + Sync>;
type VariantReader = Box<dyn Fn(&mut DataInputView<'_>) -> Result<Erased> + Send + Sync>;

/// Today's field values as read from old bytes, by today's field index.
pub struct Slots {
    values: Vec<Option<Erased>>,
    type_name: &'static str,
}

impl Slots {
    fn new(n: usize, type_name: &'static str) -> Self {
        Self {
            values: (0..n).map(|_| None).collect(),
            type_name,
        }
    }

    /// The value read for field `index`, or `None` when the old bytes lack the field.
    ///
    /// # Errors
    ///
    /// A value of another type in the slot (a bug in generated code, reported, not a panic).
    pub fn take<T: 'static>(&mut self, index: usize) -> Result<Option<T>> {
        match self.values.get_mut(index).and_then(Option::take) {
            None => Ok(None),
            Some(v) => v.downcast::<T>().map(|b| Some(*b)).map_err(|_| {
                Error::custom(format!(
                    "migration of `{}` produced a wrong type for field #{index}",
                    self.type_name
                ))
            }),
        }
    }

    /// The value read for field `index`; the field must have been in the old bytes.
    ///
    /// # Errors
    ///
    /// The field is missing (resolution refuses that case for fields without a default).
    pub fn require<T: 'static>(&mut self, index: usize) -> Result<T> {
        let type_name = self.type_name;
        self.take(index)?.ok_or_else(|| {
            Error::custom(format!(
                "old bytes of `{type_name}` lack field #{index}, which has no default"
            ))
        })
    }
}

enum Step {
    /// Read today's field at this index.
    Into(usize),
    /// Skip a removed field.
    Skip(RestoredSerializer),
}

thread_local! {
    /// Types whose resolution is in progress on this thread, with the cell their
    /// migration reader will be put in (for recursive types).
    static RESOLVING: RefCell<Vec<(&'static str, Arc<dyn Any + Send + Sync>)>> = const { RefCell::new(Vec::new()) };
}

/// The verdict for an old snapshot that refers back to a type being resolved further up
/// (a recursive type): a migration through the enclosing type's own reader, filled in when
/// its resolution completes. `None` when `old` is not such a reference.
fn recursive_reader<T: 'static>(old: &SerializerSnapshot) -> Option<Compatibility<T>> {
    if old.kind() != RECURSIVE {
        return None;
    }
    let target = DataInputView::new(old.payload())
        .read_len_prefixed()
        .ok()
        .and_then(|b| std::str::from_utf8(b).ok())?;
    let (name, cell) = RESOLVING.with(|r| {
        r.borrow()
            .iter()
            .rev()
            .find(|(n, _)| *n == target)
            .map(|(n, c)| (*n, Arc::clone(c)))
    })?;
    let cell = cell.downcast::<OnceLock<MigrationReader<T>>>().ok()?;
    // The depth budget is spent where today's type spends it: the migration reader of the
    // recursive field (`Lazy`) enters one level, as today's serializer does when it writes
    // the migrated value. Spending here too would count a level twice; spending only here
    // counted one level fewer than the writer (a `Chain`'s last `None` link), so that a
    // migration read values it could not write back.
    Some(Compatibility::AfterMigration(MigrationReader::new(
        move |input| match cell.get() {
            Some(reader) => reader.read(input),
            None => Err(Error::custom(format!(
                "the migration of recursive type `{name}` is incomplete"
            ))),
        },
    )))
}

/// Runs `resolve` with `name` marked as being resolved; fills the cell for recursive
/// references when the verdict is a migration.
fn with_resolving<T: 'static>(
    name: &'static str,
    resolve: impl FnOnce() -> Compatibility<T>,
) -> Compatibility<T> {
    let cell: Arc<OnceLock<MigrationReader<T>>> = Arc::new(OnceLock::new());
    RESOLVING.with(|r| {
        r.borrow_mut()
            .push((name, Arc::clone(&cell) as Arc<dyn Any + Send + Sync>))
    });
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            RESOLVING.with(|r| r.borrow_mut().pop());
        }
    }
    let pop = Pop;
    let verdict = resolve();
    drop(pop);
    if let Compatibility::AfterMigration(reader) = &verdict {
        let _ = cell.set(reader.clone());
    }
    verdict
}

/// The resolution of one struct (or variant) against its old snapshot, built field by
/// field by generated code.
pub struct StructPlan<'a> {
    schema: &'static StructSchema,
    type_name: &'static str,
    old_names: Vec<String>,
    old_fields: &'a [SerializerSnapshot],
    registry: &'a SnapshotRegistry,
    /// For today's field i, the old index it is read from.
    mapping: Vec<Option<usize>>,
    readers: Vec<Option<ErasedReader>>,
    changed: bool,
}

impl<'a> StructPlan<'a> {
    fn new(
        schema: &'static StructSchema,
        type_name: &'static str,
        old: &'a SerializerSnapshot,
        registry: &'a SnapshotRegistry,
    ) -> std::result::Result<Self, Incompatibility> {
        let (_, old_names) = parse_struct_payload(old).map_err(|e| corrupt(old, type_name, e))?;
        let mut mapping = Vec::with_capacity(schema.fields.len());
        for field in schema.fields {
            let exact = old_names.iter().position(|n| n == field.name);
            let found = exact.or_else(|| old_names.iter().position(|n| field.answers_to(n)));
            if found.is_none() && !field.has_default {
                return Err(Incompatibility::new("nothing", field.type_name)
                    .with_detail("field added without a default: add #[typeinfo(default)]")
                    .within(PathSegment::Field(field.name.to_owned()))
                    .in_type(type_name));
            }
            mapping.push(found);
        }
        let changed = old_names.len() != schema.fields.len()
            || old_names
                .iter()
                .zip(schema.fields)
                .any(|(o, f)| o != f.name);
        Ok(Self {
            schema,
            type_name,
            old_names,
            old_fields: old.nested(),
            registry,
            readers: (0..schema.fields.len()).map(|_| None).collect(),
            mapping,
            changed,
        })
    }

    /// Resolves today's field `index` with its serializer.
    ///
    /// # Errors
    ///
    /// The field's type changed incompatibly; the incompatibility names `Type.field`.
    pub fn field<T: Send + 'static, S: TypeSerializer<T> + Clone>(
        &mut self,
        index: usize,
        serializer: &S,
    ) -> std::result::Result<(), Incompatibility> {
        let Some(old_index) = self.mapping[index] else {
            return Ok(());
        };
        let name = self.schema.fields[index].name;
        let old = &self.old_fields[old_index];
        let verdict = serializer.resolve(old, self.registry);
        let reader = verdict.into_reader(serializer.clone()).map_err(|inc| {
            inc.within(PathSegment::Field(name.to_owned()))
                .in_type(self.type_name)
        })?;
        if reader.is_migrating() {
            self.changed = true;
        }
        let erased: ErasedReader = match reader {
            FieldReader::Current(s) => {
                Arc::new(move |input| Ok(Box::new(s.deserialize(input)?) as Erased))
            }
            FieldReader::Migrating(r) => {
                Arc::new(move |input| Ok(Box::new(r.read(input)?) as Erased))
            }
        };
        self.readers[index] = Some(erased);
        Ok(())
    }

    /// The steps that read one old value, or why a removed field cannot be skipped.
    fn steps(&self) -> std::result::Result<Vec<Step>, Incompatibility> {
        let mut steps = Vec::with_capacity(self.old_names.len());
        for (old_index, old_name) in self.old_names.iter().enumerate() {
            match self.mapping.iter().position(|m| *m == Some(old_index)) {
                Some(new_index) => steps.push(Step::Into(new_index)),
                None => {
                    let restored =
                        self.registry
                            .restore(&self.old_fields[old_index])
                            .map_err(|e| {
                                Incompatibility::new(
                                    self.old_fields[old_index].type_name(),
                                    "nothing",
                                )
                                .with_detail(format!("removed field cannot be skipped: {e}"))
                                .within(PathSegment::Field(old_name.clone()))
                                .in_type(self.type_name)
                            })?;
                    steps.push(Step::Skip(restored));
                }
            }
        }
        Ok(steps)
    }

    /// A reader of one old value into `Slots`, given the steps.
    fn slot_reader(
        self,
        steps: Vec<Step>,
    ) -> impl Fn(&mut DataInputView<'_>) -> Result<Slots> + Send + Sync + 'static {
        let readers = self.readers;
        let n = self.schema.fields.len();
        let type_name = self.type_name;
        move |input| {
            let mut slots = Slots::new(n, type_name);
            for step in &steps {
                match step {
                    Step::Into(i) => {
                        let reader = readers[*i].as_ref().ok_or_else(|| {
                            Error::custom(format!("field #{i} of `{type_name}` was not resolved"))
                        })?;
                        slots.values[*i] = Some(reader(input)?);
                    }
                    Step::Skip(s) => s.skip(input)?,
                }
            }
            Ok(slots)
        }
    }
}

/// Why `old` cannot be the same kind of derived type as `new` (a struct that became an
/// enum, a primitive that became a struct, a snapshot version this code does not read).
fn shape_change(old: &SerializerSnapshot, new: &SerializerSnapshot) -> Option<Incompatibility> {
    let describe = |s: &SerializerSnapshot| match s.kind() {
        kinds::STRUCT => "a struct",
        kinds::ENUM => "an enum",
        _ => "not a derived type",
    };
    if old.kind() != new.kind() {
        let detail = format!("{} became {}", describe(old), describe(new));
        return Some(Incompatibility::between(old, new).with_detail(detail));
    }
    if old.version() != 1 {
        let detail = format!(
            "snapshot version {} of `{}` is newer than this code reads",
            old.version(),
            old.kind()
        );
        return Some(Incompatibility::between(old, new).with_detail(detail));
    }
    None
}

fn corrupt(old: &SerializerSnapshot, type_name: &str, e: Error) -> Incompatibility {
    Incompatibility::new(old.type_name(), type_name)
        .with_detail(format!("unreadable snapshot: {e}"))
}

/// Resolves a derived struct against `old`.
///
/// `new` is today's snapshot; `fields` resolves each field on the plan (one generated line
/// per field); `build` makes today's value from the slots.
pub fn resolve_struct<T: Send + 'static>(
    schema: &'static StructSchema,
    new: &SerializerSnapshot,
    old: &SerializerSnapshot,
    registry: &SnapshotRegistry,
    fields: impl FnOnce(&mut StructPlan<'_>) -> std::result::Result<(), Incompatibility>,
    build: fn(&mut Slots) -> Result<T>,
) -> Compatibility<T> {
    if old == new {
        return Compatibility::AsIs;
    }
    if let Some(verdict) = recursive_reader::<T>(old) {
        return verdict;
    }
    if let Some(inc) = shape_change(old, new) {
        return Compatibility::Incompatible(inc);
    }
    if let Err(e) = old.check_recursion() {
        return Compatibility::Incompatible(corrupt(old, schema.name, e));
    }
    let old_name = old.type_name();
    if old_name != schema.name {
        return Compatibility::Incompatible(
            Incompatibility::new(old_name, schema.name).with_detail("a different type identity"),
        );
    }
    with_resolving::<T>(schema.name, || {
        let mut plan = match StructPlan::new(schema, schema.name, old, registry) {
            Ok(plan) => plan,
            Err(inc) => return Compatibility::Incompatible(inc),
        };
        if let Err(inc) = fields(&mut plan) {
            return Compatibility::Incompatible(inc);
        }
        if !plan.changed {
            return Compatibility::AsIs;
        }
        let steps = match plan.steps() {
            Ok(steps) => steps,
            Err(inc) => return Compatibility::Incompatible(inc),
        };
        let read = plan.slot_reader(steps);
        Compatibility::AfterMigration(MigrationReader::new(move |input| build(&mut read(input)?)))
    })
}

/// The resolution of an enum: one struct plan per variant of today's type that the old
/// type had.
pub struct EnumPlan<'a> {
    name: &'static str,
    variants: &'static [VariantSchema],
    old_variants: &'a [SerializerSnapshot],
    registry: &'a SnapshotRegistry,
    /// For today's variant i, the old index it is read from.
    mapping: Vec<Option<usize>>,
    /// For each old variant, a reader into today's value.
    readers: Vec<Option<VariantReader>>,
    changed: bool,
}

impl EnumPlan<'_> {
    /// Resolves today's variant `index`: `fields` resolves its fields on a struct plan,
    /// `build` makes the value from the slots.
    ///
    /// # Errors
    ///
    /// A field of the variant changed incompatibly.
    pub fn variant<T: Send + 'static>(
        &mut self,
        index: usize,
        fields: impl FnOnce(&mut StructPlan<'_>) -> std::result::Result<(), Incompatibility>,
        build: fn(&mut Slots) -> Result<T>,
    ) -> std::result::Result<(), Incompatibility> {
        let Some(old_index) = self.mapping[index] else {
            return Ok(());
        };
        let variant = &self.variants[index];
        let old = &self.old_variants[old_index];
        let mut plan = StructPlan::new(&variant.schema, self.name, old, self.registry)
            .map_err(|inc| inc.within(PathSegment::Field(variant.schema.name.to_owned())))?;
        fields(&mut plan).map_err(|inc| {
            inc.within(PathSegment::Field(variant.schema.name.to_owned()))
                .in_type(self.name)
        })?;
        if plan.changed || old_index != index {
            self.changed = true;
        }
        let steps = plan.steps()?;
        let read = plan.slot_reader(steps);
        self.readers[old_index] = Some(Box::new(move |input| {
            Ok(Box::new(build(&mut read(input)?)?) as Erased)
        }));
        Ok(())
    }
}

/// Resolves a derived enum against `old`: variants are matched by name or alias; variants
/// added anywhere migrate, a removed variant is incompatible (old bytes may hold it).
pub fn resolve_enum<T: Send + 'static>(
    name: &'static str,
    variants: &'static [VariantSchema],
    new: &SerializerSnapshot,
    old: &SerializerSnapshot,
    registry: &SnapshotRegistry,
    resolve_variants: impl FnOnce(&mut EnumPlan<'_>) -> std::result::Result<(), Incompatibility>,
) -> Compatibility<T> {
    if old == new {
        return Compatibility::AsIs;
    }
    if let Some(verdict) = recursive_reader::<T>(old) {
        return verdict;
    }
    if let Some(inc) = shape_change(old, new) {
        return Compatibility::Incompatible(inc);
    }
    if let Err(e) = old.check_recursion() {
        return Compatibility::Incompatible(corrupt(old, name, e));
    }
    let old_variant_names = match parse_enum_payload(old) {
        Ok((old_name, _)) if old_name != name => {
            return Compatibility::Incompatible(
                Incompatibility::new(old_name, name).with_detail("a different type identity"),
            )
        }
        Ok((_, names)) => names,
        Err(e) => return Compatibility::Incompatible(corrupt(old, name, e)),
    };
    for old_variant in &old_variant_names {
        if !variants.iter().any(|v| v.answers_to(old_variant)) {
            return Compatibility::Incompatible(
                Incompatibility::new(old_variant.clone(), "nothing")
                    .with_detail("variant removed; stored values may hold it")
                    .within(PathSegment::Field(old_variant.clone()))
                    .in_type(name),
            );
        }
    }
    with_resolving::<T>(name, || {
        let mapping: Vec<Option<usize>> = variants
            .iter()
            .map(|v| {
                let exact = old_variant_names.iter().position(|n| n == v.schema.name);
                exact.or_else(|| old_variant_names.iter().position(|n| v.answers_to(n)))
            })
            .collect();
        // Variants added, removed, reordered or renamed change the schema (old tags are
        // mapped to today's variants by name), as in the struct case.
        let changed = old_variant_names.len() != variants.len()
            || old_variant_names
                .iter()
                .zip(variants)
                .any(|(o, v)| *o != v.schema.name);
        let mut plan = EnumPlan {
            name,
            variants,
            old_variants: old.nested(),
            registry,
            mapping,
            readers: (0..old_variant_names.len()).map(|_| None).collect(),
            changed,
        };
        if let Err(inc) = resolve_variants(&mut plan) {
            return Compatibility::Incompatible(inc);
        }
        if !plan.changed {
            return Compatibility::AsIs;
        }
        let readers = plan.readers;
        Compatibility::AfterMigration(MigrationReader::new(move |input| {
            let tag = input.read_varint()?;
            let reader = usize::try_from(tag)
                .ok()
                .and_then(|i| readers.get(i))
                .and_then(Option::as_ref)
                .ok_or_else(|| Error::InvalidTag {
                    what: name.to_owned(),
                    tag,
                })?;
            reader(input)?
                .downcast::<T>()
                .map(|b| *b)
                .map_err(|_| Error::custom(format!("migration of `{name}` produced a wrong type")))
        }))
    })
}
