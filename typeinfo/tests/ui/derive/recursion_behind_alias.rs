// Recursion hidden behind a type alias: the derive cannot see `Node` inside `Children`, so
// it does not create that field's serializer lazily, and the compiler reports a cycle: the
// first error is an overflow at the field's type (`kids: Children`), naming `Node`. The
// hint to mark the field `#[typeinfo(recursive)]` cannot be in the message (the compiler
// has no way to add a note to an overflow, E0275); the derive's docs say what it means.
// The follow-on errors are the same overflow, seen from the generated impls.
use typeinfo::TypeInfo;

type Children = Vec<Node>;

#[derive(TypeInfo)]
struct Node {
    label: String,
    kids: Children,
}

fn main() {}
