// `bound = "..."` that are not where predicates: reported at the string.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
#[typeinfo(bound = "T TypeInfo")]
struct Wrapper<T> {
    inner: T,
}

fn main() {}
