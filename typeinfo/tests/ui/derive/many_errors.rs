// Several bad attributes, at every level, reported together in one compile.
use typeinfo::TypeInfo;

#[derive(TypeInfo)]
#[typeinfo(nmae = "Shape", crate = "type info")]
enum Shape {
    #[typeinfo(rename = "Round")]
    Circle {
        #[typeinfo(skip, skip, alais = "r")]
        radius: u32,
    },
    Square(#[typeinfo(with = "not a path")] u32, #[typeinfo(recursive(deep))] u32),
}

fn main() {}
