// Aliases that collide: one equal to another field's name, one given to two fields, one
// given twice to the same field, one equal to the field's own name. Each is reported at the
// alias.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Order {
    id: u64,
    #[typeinfo(alias = "id")]
    number: u64,
    #[typeinfo(alias = "old")]
    a: u32,
    #[typeinfo(alias = "old")]
    b: u32,
    #[typeinfo(alias = "was", alias = "was")]
    c: u32,
    #[typeinfo(alias = "d")]
    d: u32,
}

fn main() {}
