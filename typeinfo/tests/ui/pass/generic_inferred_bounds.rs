// A generic struct and enum: the bounds are inferred from the serialized fields (`T:
// TypeInfo`), a skipped or phantom-free parameter needs none, and the derived type is
// usable with any `T` that has TypeInfo.
use std::marker::PhantomData;

use typeinfo::{from_bytes, to_bytes, TypeInfo};

#[derive(TypeInfo, Debug, PartialEq)]
struct Page<T> {
    items: Vec<T>,
    next: Option<u64>,
}

#[derive(TypeInfo, Debug, PartialEq)]
enum Reply<T, E> {
    Ok(T),
    Err { error: E },
}

/// `U` is used only by a skipped field: no `U: TypeInfo` bound is inferred for it.
#[derive(TypeInfo, Debug, PartialEq)]
struct Tagged<T, U: Send + 'static> {
    value: T,
    #[typeinfo(skip)]
    tag: PhantomData<fn() -> U>,
}

#[derive(Debug, PartialEq)]
struct NoTypeInfo;

fn main() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Page<String>>()?;
    let page = Page { items: vec!["a".to_owned(), "b".to_owned()], next: Some(2) };
    assert_eq!(from_bytes(&s, &to_bytes(&s, &page)?)?, page);

    let s = typeinfo::serializer::<Reply<u32, String>>()?;
    let reply = Reply::Err { error: "nope".to_owned() };
    assert_eq!(from_bytes(&s, &to_bytes(&s, &reply)?)?, reply);

    let s = typeinfo::serializer::<Tagged<i8, NoTypeInfo>>()?;
    let tagged = Tagged { value: -1, tag: PhantomData };
    assert_eq!(from_bytes(&s, &to_bytes(&s, &tagged)?)?, tagged);
    assert_eq!(<Tagged<i8, NoTypeInfo>>::description().fields().len(), 1);
    Ok(())
}
