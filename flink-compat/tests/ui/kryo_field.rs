use typeinfo::TypeInfo;
use typeinfo_flink_compat::LocalDate;

// Flink's type extraction gives a LocalDate field Kryo: no FlinkType, so this does not
// compile (rather than misread Kryo's bytes). A Java array needs `flink_with`.
#[derive(TypeInfo)]
#[typeinfo(flink_pojo = "com.example.Booking")]
struct Booking {
    day: LocalDate,
    tags: [i32; 2],
}

fn main() {}
