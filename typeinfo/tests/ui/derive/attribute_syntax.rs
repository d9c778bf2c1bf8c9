// `#[typeinfo]` without a list, and `#[typeinfo = "..."]`: each is reported at the
// attribute, and the other attributes are still checked.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
#[typeinfo]
struct Order {
    #[typeinfo = "skip"]
    id: u64,
    #[typeinfo(skip, nope)]
    note: String,
}

fn main() {}
