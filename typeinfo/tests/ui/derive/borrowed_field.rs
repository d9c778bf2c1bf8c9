// Borrowed data: the lifetime parameter and the borrowed field are each reported.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Name<'a> {
    first: &'a str,
    last: String,
}

fn main() {}
