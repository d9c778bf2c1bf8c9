// `recursive` with `with`: a hand-written serializer is not created lazily.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Order {
    #[typeinfo(recursive, with = "typeinfo::StringSerializer")]
    note: String,
}

fn main() {}
