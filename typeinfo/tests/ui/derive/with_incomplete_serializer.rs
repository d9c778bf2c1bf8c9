// A `with` serializer type that implements `TypeSerializer` but neither `Clone` nor
// `Default`: each missing trait is reported at the path in the attribute.
use typeinfo::{DataInputView, DataOutputView, SerializerSnapshot, TypeInfo, TypeSerializer};

#[derive(Debug)]
struct Upper;

impl TypeSerializer<String> for Upper {
    fn serialize(&self, value: &String, out: &mut DataOutputView) -> typeinfo::Result<()> {
        out.write_len_prefixed(value.to_uppercase().as_bytes());
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> typeinfo::Result<String> {
        Ok(String::from_utf8_lossy(input.read_len_prefixed()?).into_owned())
    }
    fn copy(&self, value: &String) -> String {
        value.clone()
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> typeinfo::Result<()> {
        input.read_len_prefixed().map(drop)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new("example.upper", 1)
    }
}

#[derive(TypeInfo)]
struct Order {
    #[typeinfo(with = "Upper")]
    note: String,
}

fn main() {}
