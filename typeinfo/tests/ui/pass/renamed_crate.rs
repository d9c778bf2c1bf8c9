// `crate = "..."`: the generated code names the typeinfo crate by the given path, here a
// renamed extern crate, so no `::typeinfo` needs to be in scope.
extern crate typeinfo as ti;

mod inner {
    #[derive(ti::TypeInfo)]
    #[typeinfo(crate = "ti")]
    pub struct Order {
        pub id: u64,
        pub lines: Vec<(String, u32)>,
    }

    #[derive(ti::TypeInfo)]
    #[typeinfo(crate = "crate::reexport")]
    pub enum Status {
        Open,
        Closed { reason: String },
    }
}

mod reexport {
    pub use ti::*;
}

fn main() -> ti::Result<()> {
    let s = ti::serializer::<inner::Order>()?;
    let order = inner::Order { id: 7, lines: vec![("pen".to_owned(), 2)] };
    let back = ti::from_bytes(&s, &ti::to_bytes(&s, &order)?)?;
    assert_eq!((back.id, back.lines), (7, vec![("pen".to_owned(), 2)]));
    let _ = ti::serializer::<inner::Status>()?;
    Ok(())
}
