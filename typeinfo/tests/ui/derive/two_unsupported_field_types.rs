// Two fields whose types have no TypeInfo: one error each, on the field's type, and
// nothing on `#[derive(TypeInfo)]`.
use typeinfo::TypeInfo;

struct NotDescribed;
struct AlsoNotDescribed;

#[derive(TypeInfo)]
struct Order {
    id: u64,
    customer: NotDescribed,
    shipping: Option<AlsoNotDescribed>,
}

fn main() {}
