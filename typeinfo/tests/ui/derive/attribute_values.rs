// Attribute values of the wrong shape: a flag given a value, a key without its value, a
// value that is not a string literal. Each is reported at its tokens, and the items after
// it in the same `#[typeinfo(...)]` are still checked.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
#[typeinfo(name = Order, crate = "::typeinfo", bound)]
struct Order {
    #[typeinfo(skip = true, default(zero))]
    a: u64,
    #[typeinfo(recursive(deep), alias)]
    b: Vec<u64>,
    #[typeinfo(default = zero, alias = 3, with = 'c')]
    c: String,
}

fn main() {}
