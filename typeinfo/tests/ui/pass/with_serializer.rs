// `with = "..."`: a hand-written serializer type for one field, implementing
// `TypeSerializer<FieldType> + Clone + Default + Debug`.
use typeinfo::{
    from_bytes, to_bytes, DataInputView, DataOutputView, SerializerSnapshot, TypeInfo, TypeSerializer,
};

/// Writes a temperature in tenths of a degree as a signed varint.
#[derive(Clone, Default, Debug)]
struct DeciDegrees;

impl TypeSerializer<f32> for DeciDegrees {
    fn serialize(&self, value: &f32, out: &mut DataOutputView) -> typeinfo::Result<()> {
        out.write_varint_signed((value * 10.0).round() as i64);
        Ok(())
    }
    fn deserialize(&self, input: &mut DataInputView<'_>) -> typeinfo::Result<f32> {
        Ok(input.read_varint_signed()? as f32 / 10.0)
    }
    fn copy(&self, value: &f32) -> f32 {
        *value
    }
    fn skip(&self, input: &mut DataInputView<'_>) -> typeinfo::Result<()> {
        input.read_varint_signed().map(drop)
    }
    fn snapshot(&self) -> SerializerSnapshot {
        SerializerSnapshot::new("example.deci-degrees", 1)
    }
}

mod ser {
    pub(crate) use super::DeciDegrees;
}

#[derive(TypeInfo, Debug, PartialEq)]
struct Reading {
    sensor: String,
    #[typeinfo(with = "DeciDegrees")]
    celsius: f32,
    #[typeinfo(with = "ser::DeciDegrees")]
    fahrenheit: f32,
}

fn main() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Reading>()?;
    let reading = Reading { sensor: "t1".to_owned(), celsius: 21.5, fahrenheit: 70.7 };
    let bytes = to_bytes(&s, &reading)?;
    assert_eq!(bytes.len(), 1 + 2 + 2 + 2);
    assert_eq!(from_bytes(&s, &bytes)?, reading);
    Ok(())
}
