struct NotDescribed;

fn requires_type_info<T: typeinfo::TypeInfo>() {}

fn main() {
    requires_type_info::<NotDescribed>();
}
