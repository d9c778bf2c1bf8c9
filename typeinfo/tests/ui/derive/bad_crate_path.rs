// `crate = "..."` that is not a path: reported at the string.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
#[typeinfo(crate = "type info")]
struct Order {
    id: u64,
}

fn main() {}
