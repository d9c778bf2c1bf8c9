// Unions cannot be derived: the error points at `union` and suggests an enum.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
union Bits {
    int: u32,
    float: f32,
}

fn main() {}
