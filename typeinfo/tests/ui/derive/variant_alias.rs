// Variant aliases that collide: one equal to another variant's name, one given to two
// variants, one equal to the variant's own name. Each is reported at the alias.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
enum Status {
    Open,
    #[typeinfo(alias = "Open")]
    Closed,
    #[typeinfo(alias = "Gone")]
    Deleted,
    #[typeinfo(alias = "Gone")]
    Archived,
    #[typeinfo(alias = "Paused")]
    Paused,
}

fn main() {}
