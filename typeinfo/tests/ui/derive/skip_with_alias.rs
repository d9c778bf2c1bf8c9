// `skip` with `alias` (and `skip` with `with`): a skipped field has no schema name and is
// not serialized, so both are refused.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Order {
    id: u64,
    #[typeinfo(skip, alias = "cache")]
    memo: String,
    #[typeinfo(skip, with = "typeinfo::StringSerializer")]
    note: String,
}

fn main() {}
