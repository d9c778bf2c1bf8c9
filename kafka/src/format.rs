//! How values become bytes in Kafka and back: typeinfo's own bytes, JSON through serde, raw
//! bytes and UTF-8 strings. Each format reads ([`ValueDeserializer`], for the source) and
//! writes ([`ValueSerializer`], for the sink); a closure `Fn(&T) -> Vec<u8>` is a serializer
//! too (a key taken from a field, say).

use std::marker::PhantomData;

use typeinfo::{DataInputView, DataOutputView, SerializerConfig, TypeInfo, TypeSerializer};
use typeinfo_runtime::Data;

/// Turns the bytes of a record's key or value into a value.
pub trait ValueDeserializer: Send + Sync + 'static {
    /// The value read.
    type Value: Data;

    /// Reads one value from all of `bytes`.
    ///
    /// # Errors
    ///
    /// The bytes are not a value: the message says why (the source adds topic, partition and
    /// offset).
    fn deserialize(&self, bytes: &[u8]) -> Result<Self::Value, String>;
}

/// Turns a value into the bytes of a record's key or value.
pub trait ValueSerializer<T>: Send + Sync + 'static {
    /// The bytes of `value`.
    ///
    /// # Errors
    ///
    /// The value cannot be written: the message says why.
    fn serialize(&self, value: &T) -> Result<Vec<u8>, String>;
}

impl<T, F: Fn(&T) -> Vec<u8> + Send + Sync + 'static> ValueSerializer<T> for F {
    fn serialize(&self, value: &T) -> Result<Vec<u8>, String> {
        Ok(self(value))
    }
}

/// typeinfo's own bytes of `T` (its serializer, no schema in the bytes: writer and reader
/// must agree on the type).
pub struct TypeInfoBytes<T: TypeInfo> {
    serializer: T::Serializer,
}

impl<T: TypeInfo> std::fmt::Debug for TypeInfoBytes<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TypeInfoBytes<{}>", std::any::type_name::<T>())
    }
}

impl<T: TypeInfo> TypeInfoBytes<T> {
    /// The format of `T` with the default serializer configuration.
    ///
    /// # Errors
    ///
    /// `T` has no serializer under that configuration (a disabled generic type).
    pub fn new() -> crate::Result<Self> {
        Self::with_config(&SerializerConfig::default())
    }

    /// The format of `T` with `config`.
    ///
    /// # Errors
    ///
    /// `T` has no serializer under `config`.
    pub fn with_config(config: &SerializerConfig) -> crate::Result<Self> {
        let serializer = T::create_serializer(config).map_err(|e| {
            crate::Error::Config(format!(
                "no serializer for {}: {e}",
                std::any::type_name::<T>()
            ))
        })?;
        Ok(TypeInfoBytes { serializer })
    }
}

impl<T: Data> ValueDeserializer for TypeInfoBytes<T>
where
    T::Serializer: Sync,
{
    type Value = T;
    fn deserialize(&self, bytes: &[u8]) -> Result<T, String> {
        let mut input = DataInputView::new(bytes);
        let value = self
            .serializer
            .deserialize(&mut input)
            .map_err(|e| e.to_string())?;
        if !input.is_empty() {
            return Err(format!("{} bytes after the value", input.remaining()));
        }
        Ok(value)
    }
}

impl<T: Data> ValueSerializer<T> for TypeInfoBytes<T>
where
    T::Serializer: Sync,
{
    fn serialize(&self, value: &T) -> Result<Vec<u8>, String> {
        let mut out = DataOutputView::new();
        self.serializer
            .serialize(value, &mut out)
            .map_err(|e| e.to_string())?;
        Ok(out.into_inner())
    }
}

/// JSON through serde.
pub struct Json<T>(PhantomData<fn() -> T>);

impl<T> Json<T> {
    /// JSON of `T`.
    pub fn new() -> Self {
        Json(PhantomData)
    }
}

impl<T> Default for Json<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for Json<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Json<{}>", std::any::type_name::<T>())
    }
}

impl<T: Data + serde::de::DeserializeOwned> ValueDeserializer for Json<T> {
    type Value = T;
    fn deserialize(&self, bytes: &[u8]) -> Result<T, String> {
        serde_json::from_slice(bytes).map_err(|e| e.to_string())
    }
}

impl<T: serde::Serialize + 'static> ValueSerializer<T> for Json<T> {
    fn serialize(&self, value: &T) -> Result<Vec<u8>, String> {
        serde_json::to_vec(value).map_err(|e| e.to_string())
    }
}

/// The bytes as they are (`Vec<u8>`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RawBytes;

impl ValueDeserializer for RawBytes {
    type Value = Vec<u8>;
    fn deserialize(&self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        Ok(bytes.to_vec())
    }
}

impl ValueSerializer<Vec<u8>> for RawBytes {
    fn serialize(&self, value: &Vec<u8>) -> Result<Vec<u8>, String> {
        Ok(value.clone())
    }
}

/// UTF-8 text (`String`); bytes that are not UTF-8 do not deserialize.
#[derive(Debug, Clone, Copy, Default)]
pub struct Utf8;

impl ValueDeserializer for Utf8 {
    type Value = String;
    fn deserialize(&self, bytes: &[u8]) -> Result<String, String> {
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|e| format!("not UTF-8: {e}"))
    }
}

impl ValueSerializer<String> for Utf8 {
    fn serialize(&self, value: &String) -> Result<Vec<u8>, String> {
        Ok(value.as_bytes().to_vec())
    }
}
