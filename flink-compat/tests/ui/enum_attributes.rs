use typeinfo::TypeInfo;

// A Flink enum's constants have no fields; a POJO is a struct.
#[derive(TypeInfo, Clone)]
#[typeinfo(flink_enum = "com.example.Side")]
enum Side {
    Buy,
    Sell { price: f64 },
}

#[derive(TypeInfo, Clone)]
#[typeinfo(flink_pojo = "com.example.Side")]
enum NotAPojo {
    A,
}

#[derive(TypeInfo, Clone)]
enum NotAFlinkEnum {
    #[typeinfo(flink_name = "A")]
    A,
}

#[derive(TypeInfo, Clone)]
#[typeinfo(flink_enum = "com.example.Dup")]
enum Dup {
    #[typeinfo(flink_name = "B")]
    A,
    B,
}

fn main() {}
