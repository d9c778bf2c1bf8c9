// `bound = "..."` that leaves out what a field needs: the first error points at the field's
// type and names the missing trait; follow-on errors point at `#[derive(TypeInfo)]`.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
#[typeinfo(bound = "T: Clone")]
struct Wrapper<T> {
    inner: T,
}

fn main() {}
