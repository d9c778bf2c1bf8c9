//! The derive's diagnostics for the Flink attributes (`tests/ui/*.rs` with the expected
//! `.stderr` beside each; refresh with `TRYBUILD=overwrite` and read the diff).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
