// An unknown attribute on a field: named, at its token, with the ones that exist.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Order {
    #[typeinfo(skip_serializing)]
    id: u64,
}

fn main() {}
