//! Flink's byte layouts, one module per Flink serializer family: the serializers and the
//! Rust value types they read and write.

pub(crate) mod array;
pub(crate) mod decimal;
pub(crate) mod enumeration;
pub(crate) mod list;
pub(crate) mod map;
pub(crate) mod nullable;
pub mod pojo;
pub(crate) mod primitive;
pub(crate) mod row;
pub(crate) mod string;
pub(crate) mod time;
pub(crate) mod tuple;
