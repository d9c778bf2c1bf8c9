use typeinfo::TypeInfo;

// `flink_name` and `flink_with` need `flink_pojo` on the type.
#[derive(TypeInfo)]
struct NotAPojo {
    #[typeinfo(flink_name = "userId")]
    user_id: String,
}

// Two fields with one Java name; a skipped field with a Java name; a bad Java name.
#[derive(TypeInfo)]
#[typeinfo(flink_pojo = "com.example.Order")]
struct Twice {
    #[typeinfo(flink_name = "amount")]
    total: f64,
    amount: f64,
    #[typeinfo(skip, flink_name = "cache")]
    cache: u32,
    #[typeinfo(flink_name = "user id")]
    user: String,
    // An alias that is a current name.
    #[typeinfo(flink_alias = "amount")]
    price: f64,
}

// A POJO's fields have names, and its types are fixed.
#[derive(TypeInfo)]
#[typeinfo(flink_pojo = "com.example.Pair")]
struct Pair(String, f64);

#[derive(TypeInfo)]
#[typeinfo(flink_pojo = "com.example.Box")]
struct Generic<T> {
    value: T,
}

fn main() {}
