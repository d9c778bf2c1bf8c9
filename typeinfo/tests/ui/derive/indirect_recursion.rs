// Indirect recursion without `recursive`: the types' TypeInfo impls (and comparators)
// require each other, and the compiler reports an overflow, first at the fields' types
// (`Vec<Entry>`, `Box<Folder>`). The cure, `#[typeinfo(recursive)]` on one of the fields,
// is not in the message: the derive sees one type at a time and cannot detect the cycle,
// and the compiler has no way to add a note to an overflow (E0275). The derive's docs
// say what the overflow means.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
struct Folder {
    name: String,
    files: Vec<Entry>,
}

#[derive(TypeInfo)]
enum Entry {
    File(String),
    Folder(Box<Folder>),
}

fn main() {}
