// `skip` on a field whose type is not `Default`, without `default = "path"`: the error
// points at the field's type and says how to give it a value.
use typeinfo::TypeInfo;

struct Connection {
    _fd: i32,
}

#[derive(TypeInfo)]
struct Session {
    user: String,
    #[typeinfo(skip)]
    connection: Connection,
}

fn main() {}
