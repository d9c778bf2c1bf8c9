// An enum without variants has no values to serialize.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
enum Never {}

fn main() {}
