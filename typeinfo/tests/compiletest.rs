//! Compile-time behaviour, pinned by trybuild: the compiler refuses non-key types where a
//! key type is required, with a message that says why; `#[derive(TypeInfo)]` reports every
//! bad input at the offending token; and the derive's supported forms compile.
//!
//! Refresh the `.stderr` files with `TRYBUILD=overwrite cargo test -p typeinfo --test
//! compiletest`, and read the diff before committing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/key_type/*.rs");
    t.compile_fail("tests/ui/derive/*.rs");
    t.compile_fail("tests/ui/generic/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
