//! The checks of one typed serializer (and the restored, type-free reader of its snapshot)
//! on one input.
//!
//! - `deserialize`, `deserialize_into`, `skip` and `copy_serialized` agree: when the value
//!   reads, the others succeed and stop at the same byte, and `copy_serialized` copies
//!   exactly the bytes read.
//! - A value that reads re-serializes into bytes that read back as the same value
//!   (decode, encode, decode), and `copy` of it is equal.
//! - The restored reader reads every input the typed one reads, to the same byte; what it
//!   reads re-serializes and reads back the same.

use std::fmt::Debug;

use typeinfo::{
    from_bytes, to_bytes, DataInputView, DataOutputView, RestoredSerializer, SnapshotRegistry,
    TypeSerializer, Value,
};

use crate::harness::{Check, Outcome, Sub};
use crate::mutate::Nest;
use crate::values::{Arb, Gen};

/// Seeds per sub-target.
pub const SEEDS: usize = 12;

/// Whether two values are the same: equal, or (NaN, hash collections) equal bytes.
pub fn same<T: PartialEq, S: TypeSerializer<T>>(s: &S, a: &T, b: &T) -> bool {
    a == b || matches!((to_bytes(s, a), to_bytes(s, b)), (Ok(x), Ok(y)) if x == y)
}

/// Hex of at most 48 bytes, for messages (values themselves may be huge to print).
pub fn hex(bytes: &[u8]) -> String {
    let mut s: String = bytes.iter().take(48).map(|b| format!("{b:02x}")).collect();
    if bytes.len() > 48 {
        s.push_str(&format!("..({} bytes)", bytes.len()));
    }
    s
}

/// Decode, encode, decode of one value with `s`: the re-serialization must read back as
/// the same value.
pub fn round_trip<T: PartialEq, S: TypeSerializer<T>>(
    s: &S,
    value: &T,
    what: &str,
) -> Result<(), String> {
    let bytes = to_bytes(s, value)
        .map_err(|e| format!("{what}: a value that was read cannot be written: {e}"))?;
    let back = from_bytes(s, &bytes).map_err(|e| {
        format!(
            "{what}: re-serialized bytes {} do not read back: {e}",
            hex(&bytes)
        )
    })?;
    if !same(s, value, &back) {
        return Err(format!(
            "{what}: re-serialized bytes {} read back as another value",
            hex(&bytes)
        ));
    }
    Ok(())
}

/// Runs every check of a typed serializer (and of `restored`, the type-free reader of its
/// snapshot) on `bytes`.
pub fn check_typed<T, S>(s: &S, restored: &RestoredSerializer, reuse: &mut T, bytes: &[u8]) -> Check
where
    T: PartialEq,
    S: TypeSerializer<T>,
{
    let mut input = DataInputView::new(bytes);
    let typed = s.deserialize(&mut input);
    let end = input.position();

    let mut into_input = DataInputView::new(bytes);
    let into = s.deserialize_into(reuse, &mut into_input);
    let mut skip_input = DataInputView::new(bytes);
    let skipped = s.skip(&mut skip_input);
    let mut copy_input = DataInputView::new(bytes);
    let mut copied = DataOutputView::new();
    let copy = s.copy_serialized(&mut copy_input, &mut copied);

    let outcome = match &typed {
        Ok(value) => {
            match into {
                Ok(()) if into_input.position() == end && same(s, reuse, value) => {}
                Ok(()) => {
                    return Err("deserialize_into read another value than deserialize".to_owned())
                }
                Err(e) => {
                    return Err(format!(
                        "deserialize_into failed where deserialize read a value: {e}"
                    ))
                }
            }
            match skipped {
                Ok(()) if skip_input.position() == end => {}
                Ok(()) => {
                    return Err(format!(
                        "skip stopped at byte {} but the value ends at {end}",
                        skip_input.position()
                    ))
                }
                Err(e) => return Err(format!("skip failed where deserialize read a value: {e}")),
            }
            // The bytes read, or (a length written in more bytes than needed) the value's
            // canonical bytes.
            match copy {
                Ok(())
                    if copied.as_slice() == &bytes[..end]
                        || to_bytes(s, value).is_ok_and(|b| b == copied.as_slice()) => {}
                Ok(()) => {
                    return Err(format!(
                        "copy_serialized wrote {} for the value's bytes {}",
                        hex(copied.as_slice()),
                        hex(&bytes[..end])
                    ))
                }
                Err(e) => {
                    return Err(format!(
                        "copy_serialized failed where deserialize read a value: {e}"
                    ))
                }
            }
            if !same(s, &s.copy(value), value) {
                return Err("copy of a value is not equal to it".to_owned());
            }
            round_trip(s, value, "typed")?;
            Outcome::Value
        }
        Err(_) => {
            if into.is_ok() {
                return Err("deserialize_into read a value where deserialize failed".to_owned());
            }
            Outcome::Error
        }
    };

    // The typed value is not needed any more: free it before the restored reader builds its
    // (larger) tree, so that a case's heap peak is the larger of the two, not their sum.
    let typed_ok = typed.is_ok();
    drop(typed);

    let mut r_input = DataInputView::new(bytes);
    let read = restored.deserialize(&mut r_input);
    let mut r_skip = DataInputView::new(bytes);
    let r_skipped = restored.skip(&mut r_skip);
    match (typed_ok, &read) {
        (true, Err(e)) => {
            return Err(format!(
                "the restored reader refused bytes the typed one reads: {e}"
            ))
        }
        (true, Ok(_)) if r_input.position() != end => {
            return Err(format!(
                "the restored reader stopped at byte {} but the value ends at {end}",
                r_input.position()
            ))
        }
        _ => {}
    }
    if let Ok(value) = &read {
        match r_skipped {
            Ok(()) if r_skip.position() == r_input.position() => {}
            Ok(()) => {
                return Err("the restored skip stopped elsewhere than the restored read".to_owned())
            }
            Err(e) => {
                return Err(format!(
                    "the restored skip failed where the restored read succeeded: {e}"
                ))
            }
        }
        round_trip(restored, value, "restored")?;
    }
    Ok(outcome)
}

/// A sub-target for `T` with the serializer `s`: seeds are generated values, the check is
/// [`check_typed`].
pub fn sub_with<T, S>(name: &str, s: S, g: &mut Gen, nests: Vec<Nest>) -> Result<Sub, String>
where
    T: Arb + PartialEq + Debug + 'static,
    S: TypeSerializer<T> + 'static,
{
    // A snapshot that does not restore fails every case of the sub-target (its seeds land
    // in the corpus) rather than the setup of the whole target.
    let restored = match SnapshotRegistry::default().restore(&s.snapshot()) {
        Ok(r) => r,
        Err(e) => {
            let message = format!("the snapshot of the serializer does not restore: {e}");
            let seeds = vec![to_bytes(&s, &T::arb(g)).map_err(|e| e.to_string())?];
            return Ok(Sub::new(name, seeds, move |_| Err(message.clone())));
        }
    };
    let mut seeds = Vec::with_capacity(SEEDS);
    for _ in 0..SEEDS {
        seeds.push(
            to_bytes(&s, &T::arb(g))
                .map_err(|e| format!("{name}: a generated value does not serialize: {e}"))?,
        );
    }
    let mut reuse = T::arb(g);
    Ok(Sub::new(name, seeds, move |bytes| {
        check_typed(&s, &restored, &mut reuse, bytes)
    })
    .nests(nests))
}

/// A sub-target for `T` with its default serializer.
pub fn sub<T>(g: &mut Gen) -> Result<Sub, String>
where
    T: typeinfo::TypeInfo + Arb + PartialEq + Debug,
{
    let s = typeinfo::serializer::<T>().map_err(|e| e.to_string())?;
    sub_with::<T, _>(&short_type_name::<T>(), s, g, Vec::new())
}

/// `Vec<Option<String>>` for `alloc::vec::Vec<core::option::Option<alloc::string::String>>`.
pub fn short_type_name<T>() -> String {
    let full = std::any::type_name::<T>();
    let mut out = String::new();
    let mut word = String::new();
    for c in full.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            out.push_str(word.rsplit("::").next().unwrap_or(""));
            word.clear();
            out.push(c);
        }
    }
    out.push_str(word.rsplit("::").next().unwrap_or(""));
    out
}

/// A value read with a restored reader; used where a type-free reader is checked alone.
pub fn check_restored(restored: &RestoredSerializer, bytes: &[u8]) -> Check {
    let mut input = DataInputView::new(bytes);
    match restored.deserialize(&mut input) {
        Ok(value) => {
            round_trip::<Value, _>(restored, &value, "restored")?;
            Ok(Outcome::Value)
        }
        Err(_) => Ok(Outcome::Error),
    }
}
