// `name = ""`: a type identity must not be empty.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
#[typeinfo(name = "")]
struct Order {
    id: u64,
}

fn main() {}
