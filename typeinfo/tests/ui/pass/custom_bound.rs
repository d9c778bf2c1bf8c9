// `bound = "..."` replaces the inferred bounds: here the field's type is an associated
// type, which inference would bound as `<T as Source>::Item: TypeInfo`; the user states it.
use typeinfo::{from_bytes, to_bytes, TypeInfo};

trait Source: Send + 'static {
    type Item;
}

struct Numbers;

impl Source for Numbers {
    type Item = i64;
}

#[derive(TypeInfo)]
#[typeinfo(bound = "S::Item: typeinfo::TypeInfo")]
struct Batch<S: Source> {
    items: Vec<S::Item>,
}

fn main() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Batch<Numbers>>()?;
    let back = from_bytes(&s, &to_bytes(&s, &Batch::<Numbers> { items: vec![1, -2] })?)?;
    assert_eq!(back.items, vec![1, -2]);
    Ok(())
}
