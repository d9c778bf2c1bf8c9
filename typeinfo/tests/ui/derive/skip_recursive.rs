// `skip` with `recursive`: a skipped field has no serializer to create lazily.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Node {
    id: u64,
    #[typeinfo(skip, recursive)]
    parent: Option<Box<Node>>,
}

fn main() {}
