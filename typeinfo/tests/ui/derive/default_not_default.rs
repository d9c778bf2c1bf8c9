// `#[typeinfo(default)]` on a field whose type is not `Default`: the error points at the
// field's type, not at `#[derive]`.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Currency {
    code: String,
}

#[derive(TypeInfo)]
struct Price {
    cents: i64,
    #[typeinfo(default)]
    currency: Currency,
}

fn main() {}
