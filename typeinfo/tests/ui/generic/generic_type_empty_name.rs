// `generic_type!` with an empty name: refused at compile time.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Legacy {
    id: u64,
}

typeinfo::generic_type!(Legacy, name = "");

fn main() {}
