// `crate = "..."` naming a path that does not exist: reported at the string.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
#[typeinfo(crate = "type_info")]
struct Order {
    id: u64,
}

fn main() {}
