// `generic_type!` without a stable name: one error, at the call, that says what to write.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Legacy {
    id: u64,
}

typeinfo::generic_type!(Legacy);

fn main() {}
