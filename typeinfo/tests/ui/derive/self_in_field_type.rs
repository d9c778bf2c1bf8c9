// `Self` in a field's type: the generated serializer is another type, where `Self` means
// something else, so the derive asks for the type's name, at the `Self` token.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
enum Expr {
    Num(i64),
    Neg(Box<Self>),
}

#[derive(TypeInfo)]
struct Tree<T> {
    value: T,
    children: Vec<Self>,
}

fn main() {}
