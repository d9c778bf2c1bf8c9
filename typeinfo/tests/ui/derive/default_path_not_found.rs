// `default = "path"` naming a function that does not exist, or one that returns the
// wrong type: reported at the string.
use typeinfo::TypeInfo;

fn zero() -> u32 {
    0
}

#[derive(TypeInfo)]
struct Order {
    #[typeinfo(default = "missing::function")]
    id: u64,
    #[typeinfo(default = "zero")]
    note: String,
}

fn main() {}
