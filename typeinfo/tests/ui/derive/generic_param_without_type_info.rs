// A generic type used with a parameter that has no TypeInfo: the error is at the use,
// names the parameter's type, and shows the field that needs it.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Page<T> {
    items: Vec<T>,
    next: Option<u64>,
}

struct NotDescribed;

fn main() {
    let _ = typeinfo::serializer::<Page<NotDescribed>>();
}
