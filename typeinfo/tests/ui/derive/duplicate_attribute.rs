// An attribute given twice, in one `#[typeinfo(...)]` or in two: each repeat is reported
// at its own token.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
#[typeinfo(name = "shop.Order", name = "Order")]
#[typeinfo(crate = "typeinfo")]
#[typeinfo(crate = "::typeinfo")]
struct Order {
    #[typeinfo(default, default)]
    note: String,
    #[typeinfo(skip)]
    #[typeinfo(skip)]
    cache: u64,
}

fn main() {}
