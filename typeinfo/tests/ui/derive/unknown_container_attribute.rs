// An unknown attribute on the type: named, at its token, with the ones that exist.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
#[typeinfo(rename = "Order")]
struct Order {
    id: u64,
}

fn main() {}
