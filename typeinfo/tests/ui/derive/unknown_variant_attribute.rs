// An unknown attribute on an enum variant: named, at its token, with the ones that exist.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
enum Status {
    Open,
    #[typeinfo(default)]
    Closed,
}

fn main() {}
