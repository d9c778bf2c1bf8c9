//! The compiler refuses non-key types where a key type is required, with a message that
//! says why.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/key_type/*.rs");
}
