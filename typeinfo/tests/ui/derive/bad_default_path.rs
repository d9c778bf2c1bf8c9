// `default = "..."` and `with = "..."` that are not paths: each reported at its string.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Order {
    #[typeinfo(default = "zero()")]
    id: u64,
    #[typeinfo(with = "")]
    note: String,
}

fn main() {}
