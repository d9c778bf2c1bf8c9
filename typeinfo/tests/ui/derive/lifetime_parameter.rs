// A lifetime parameter, even when no field borrows with it directly.
use std::marker::PhantomData;

use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Tagged<'a> {
    id: u64,
    tag: PhantomData<fn() -> Vec<&'a ()>>,
}

fn main() {}
