//! The state of a restore in progress on this thread: the structs and enums being restored
//! (for recursive references to them) and how deep in the snapshot the current layout is.
//! The built-in layouts' restorers use it; `restored` dispatches to them.

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, OnceLock, Weak};

use crate::error::{Error, Result};
use crate::serializer::{RestoredSerializer, TypeSerializer};
use crate::snapshot::SerializerSnapshot;
use crate::value::Value;

/// The error of a value that does not fit a restored layout.
#[cold]
#[inline(never)]
pub(crate) fn mismatch(layout: &dyn fmt::Debug, value: &Value) -> Error {
    Error::custom(format!(
        "value {value:?} does not fit the restored layout {layout:?}"
    ))
}

/// The cell a recursive reference reads through: the restored serializer of the struct
/// or enum it names, set once that is built.
pub(crate) type RecursiveTarget = Arc<OnceLock<Weak<dyn TypeSerializer<Value>>>>;

thread_local! {
    /// Structs and enums being restored on this thread, innermost last, with the cell
    /// that will point at their restored serializer (for recursive references) and the
    /// snapshot level they are at.
    static RESTORING: RefCell<Vec<(String, RecursiveTarget, usize)>> = const { RefCell::new(Vec::new()) };
    /// How many `SnapshotRegistry::restore` calls are in progress on this thread: the
    /// level of the layout being restored.
    static RESTORE_LEVEL: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One level of `SnapshotRegistry::restore` in progress (left when dropped).
pub(crate) struct RestoreLevel;

impl RestoreLevel {
    pub(crate) fn enter() -> Self {
        RESTORE_LEVEL.with(|l| l.set(l.get() + 1));
        RestoreLevel
    }
}

impl Drop for RestoreLevel {
    fn drop(&mut self) {
        RESTORE_LEVEL.with(|l| l.set(l.get().saturating_sub(1)));
    }
}

/// Restores a struct or enum named `name`: recursive references inside it (restored by
/// `build`) resolve to the serializer `build` returns.
///
/// The outermost struct or enum being restored first checks that its recursion has a way
/// out ([`SerializerSnapshot::check_recursion`]); the check covers everything inside it.
pub(crate) fn restore_named<R: TypeSerializer<Value>>(
    name: &str,
    snapshot: &SerializerSnapshot,
    build: impl FnOnce() -> Result<R>,
) -> Result<RestoredSerializer> {
    if RESTORING.with(|r| r.borrow().is_empty()) {
        snapshot.check_recursion()?;
    }
    let cell: RecursiveTarget = Arc::new(OnceLock::new());
    let level = RESTORE_LEVEL.with(std::cell::Cell::get);
    RESTORING.with(|r| {
        r.borrow_mut()
            .push((name.to_owned(), Arc::clone(&cell), level))
    });
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            RESTORING.with(|r| r.borrow_mut().pop());
        }
    }
    let pop = Pop;
    let built = build();
    drop(pop);
    let restored: RestoredSerializer = Arc::new(built?);
    let _ = cell.set(Arc::downgrade(&restored));
    Ok(restored)
}

/// The cell of the struct or enum named `name` being restored on this thread, and how
/// many layouts lie between it and the reference being restored now (the struct or enum
/// itself included, the reference not).
pub(crate) fn restoring(name: &str) -> Option<(RecursiveTarget, usize)> {
    let now = RESTORE_LEVEL.with(std::cell::Cell::get);
    RESTORING.with(|r| {
        r.borrow()
            .iter()
            .rev()
            .find(|(n, _, _)| n == name)
            .map(|(_, c, level)| (Arc::clone(c), now.saturating_sub(*level)))
    })
}
