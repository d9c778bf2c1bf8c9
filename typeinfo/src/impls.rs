//! `TypeInfo`, `Comparable` and `KeyType` for the std types (they must live here: Rust's
//! orphan rule), `bytes::Bytes`, and decimals behind features.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use typeinfo_serializers as s;
use typeinfo_serializers::Result;

use crate::config::SerializerConfig;
use crate::description::{FieldDescription, TypeDescription, TypeKind};
use crate::type_info::{Comparable, KeyType, TypeInfo};

macro_rules! atomic {
    ($($ty:ty => $ser:ident, $cmp:ident, $kind:ident, key: $key:tt;)*) => {$(
        impl TypeInfo for $ty {
            type Serializer = s::$ser;
            fn create_serializer(_: &SerializerConfig) -> Result<Self::Serializer> {
                Ok(s::$ser)
            }
            fn description() -> TypeDescription {
                TypeDescription::atomic(stringify!($ty), TypeKind::$kind, $key)
            }
        }
        impl Comparable for $ty {
            type Comparator = s::$cmp;
            fn comparator() -> Self::Comparator {
                s::$cmp
            }
        }
        atomic!(@key $ty, $key);
    )*};
    (@key $ty:ty, true) => { impl KeyType for $ty {} };
    (@key $ty:ty, false) => {};
}

atomic! {
    bool => BoolSerializer, BoolComparator, Primitive, key: true;
    char => CharSerializer, CharComparator, Primitive, key: true;
    u8 => U8Serializer, U8Comparator, Primitive, key: true;
    u16 => U16Serializer, U16Comparator, Primitive, key: true;
    u32 => U32Serializer, U32Comparator, Primitive, key: true;
    u64 => U64Serializer, U64Comparator, Primitive, key: true;
    u128 => U128Serializer, U128Comparator, Primitive, key: true;
    i8 => I8Serializer, I8Comparator, Primitive, key: true;
    i16 => I16Serializer, I16Comparator, Primitive, key: true;
    i32 => I32Serializer, I32Comparator, Primitive, key: true;
    i64 => I64Serializer, I64Comparator, Primitive, key: true;
    i128 => I128Serializer, I128Comparator, Primitive, key: true;
    f32 => F32Serializer, F32Comparator, Primitive, key: false;
    f64 => F64Serializer, F64Comparator, Primitive, key: false;
    () => UnitSerializer, UnitComparator, Primitive, key: true;
    String => StringSerializer, StringComparator, String, key: true;
    bytes::Bytes => BytesSerializer, BytesComparator, Bytes, key: true;
    Duration => DurationSerializer, DurationComparator, Time, key: true;
    SystemTime => SystemTimeSerializer, SystemTimeComparator, Time, key: true;
}

fn container<T: TypeInfo>(name: &str, kind: TypeKind, key_type: bool) -> TypeDescription {
    let inner = T::description();
    TypeDescription::container(
        format!("{name}<{}>", inner.name()),
        kind,
        vec![inner],
        key_type,
    )
}

/// Whether `T` is a key type, as far as its description knows.
fn key<T: TypeInfo>() -> bool {
    T::description().is_key_type()
}

macro_rules! sequence {
    ($($coll:ident => $ser:ident, $name:literal, $kind:ident, [$($bound:tt)*] $(, $h:ident)?;)*) => {$(
        impl<T: TypeInfo + $($bound)* $(, $h: BuildHasher + Default + Clone + std::fmt::Debug + Send + Sync + 'static)?> TypeInfo for $coll<T $(, $h)?> {
            type Serializer = s::$ser<T::Serializer $(, $h)?>;
            fn create_serializer(config: &SerializerConfig) -> Result<Self::Serializer> {
                Ok(s::$ser::new(T::create_serializer(config)?))
            }
            fn description() -> TypeDescription {
                container::<T>($name, TypeKind::$kind, sequence!(@key $coll, T))
            }
        }
    )*};
    (@key HashSet, $t:ty) => { false };
    (@key $coll:ident, $t:ty) => { key::<$t>() };
}

sequence! {
    Vec => VecSerializer, "Vec", List, [];
    VecDeque => VecDequeSerializer, "VecDeque", List, [];
    BTreeSet => BTreeSetSerializer, "BTreeSet", Set, [Ord];
    HashSet => HashSetSerializer, "HashSet", Set, [Eq + Hash], H;
}

impl<T: Comparable> Comparable for Vec<T> {
    type Comparator = s::SeqComparator<T::Comparator>;
    fn comparator() -> Self::Comparator {
        s::SeqComparator::new(T::comparator())
    }
}
impl<T: Comparable> Comparable for VecDeque<T> {
    type Comparator = s::SeqComparator<T::Comparator>;
    fn comparator() -> Self::Comparator {
        s::SeqComparator::new(T::comparator())
    }
}
impl<T: Comparable + Ord> Comparable for BTreeSet<T> {
    type Comparator = s::SeqComparator<T::Comparator>;
    fn comparator() -> Self::Comparator {
        s::SeqComparator::new(T::comparator())
    }
}
impl<T: KeyType> KeyType for Vec<T> {}
impl<T: KeyType> KeyType for VecDeque<T> {}
impl<T: KeyType + Ord> KeyType for BTreeSet<T> {}

impl<T: TypeInfo, const N: usize> TypeInfo for [T; N] {
    type Serializer = s::ArraySerializer<T::Serializer, N>;
    fn create_serializer(config: &SerializerConfig) -> Result<Self::Serializer> {
        Ok(s::ArraySerializer::new(T::create_serializer(config)?))
    }
    fn description() -> TypeDescription {
        let inner = T::description();
        let key_type = inner.is_key_type();
        TypeDescription::container(
            format!("[{}; {N}]", inner.name()),
            TypeKind::Array,
            vec![inner],
            key_type,
        )
    }
}
impl<T: Comparable, const N: usize> Comparable for [T; N] {
    type Comparator = s::ArrayComparator<T::Comparator>;
    fn comparator() -> Self::Comparator {
        s::ArrayComparator::new(T::comparator())
    }
}
impl<T: KeyType, const N: usize> KeyType for [T; N] {}

impl<T: TypeInfo> TypeInfo for Option<T> {
    type Serializer = s::OptionSerializer<T::Serializer>;
    fn create_serializer(config: &SerializerConfig) -> Result<Self::Serializer> {
        Ok(s::OptionSerializer::new(T::create_serializer(config)?))
    }
    fn description() -> TypeDescription {
        container::<T>("Option", TypeKind::Option, key::<T>())
    }
}
impl<T: Comparable> Comparable for Option<T> {
    type Comparator = s::OptionComparator<T::Comparator>;
    fn comparator() -> Self::Comparator {
        s::OptionComparator::new(T::comparator())
    }
}
impl<T: KeyType> KeyType for Option<T> {}

// `Arc<T>` is `Send` (which `TypeInfo` requires) only when `T` is `Sync`; `Box<T>` needs
// no more than `T` itself, so that a type holding a `Box` of a type parameter (a generic
// recursive type) asks nothing more of that parameter than `TypeInfo`.
macro_rules! pointer {
    ($($ptr:ident $(+ $sync:ident)? => $ser:ident),*) => {$(
        impl<T: TypeInfo $(+ $sync)?> TypeInfo for $ptr<T> {
            type Serializer = s::$ser<T::Serializer>;
            fn create_serializer(config: &SerializerConfig) -> Result<Self::Serializer> {
                Ok(s::$ser::new(T::create_serializer(config)?))
            }
            fn description() -> TypeDescription {
                // Pointers are invisible in the bytes and in the schema.
                T::description()
            }
        }
        impl<T: Comparable $(+ $sync)?> Comparable for $ptr<T> {
            type Comparator = s::DerefComparator<T::Comparator>;
            fn comparator() -> Self::Comparator {
                s::DerefComparator(T::comparator())
            }
        }
        impl<T: KeyType $(+ $sync)?> KeyType for $ptr<T> {}
    )*};
}
pointer!(Box => BoxSerializer, Arc + Sync => ArcSerializer);

fn map_description<K: TypeInfo, V: TypeInfo>(name: &str, key_type: bool) -> TypeDescription {
    let (k, v) = (K::description(), V::description());
    TypeDescription::container(
        format!("{name}<{}, {}>", k.name(), v.name()),
        TypeKind::Map,
        vec![k, v],
        key_type,
    )
}

impl<K: TypeInfo + Ord, V: TypeInfo> TypeInfo for BTreeMap<K, V> {
    type Serializer = s::BTreeMapSerializer<K::Serializer, V::Serializer>;
    fn create_serializer(config: &SerializerConfig) -> Result<Self::Serializer> {
        Ok(s::BTreeMapSerializer::new(
            K::create_serializer(config)?,
            V::create_serializer(config)?,
        ))
    }
    fn description() -> TypeDescription {
        map_description::<K, V>("BTreeMap", key::<K>() && key::<V>())
    }
}
impl<K: Comparable + Ord, V: Comparable> Comparable for BTreeMap<K, V> {
    type Comparator = s::MapComparator<K::Comparator, V::Comparator>;
    fn comparator() -> Self::Comparator {
        s::MapComparator::new(K::comparator(), V::comparator())
    }
}
impl<K: KeyType + Ord, V: KeyType> KeyType for BTreeMap<K, V> {}

impl<
        K: TypeInfo + Eq + Hash,
        V: TypeInfo,
        H: BuildHasher + Default + Clone + std::fmt::Debug + Send + Sync + 'static,
    > TypeInfo for HashMap<K, V, H>
{
    type Serializer = s::HashMapSerializer<K::Serializer, V::Serializer, H>;
    fn create_serializer(config: &SerializerConfig) -> Result<Self::Serializer> {
        Ok(s::HashMapSerializer::new(
            K::create_serializer(config)?,
            V::create_serializer(config)?,
        ))
    }
    fn description() -> TypeDescription {
        map_description::<K, V>("HashMap", false)
    }
}

macro_rules! tuple {
    ($(($T:ident, $i:tt)),+) => {
        impl<$($T: TypeInfo),+> TypeInfo for ($($T,)+) {
            type Serializer = s::TupleSerializer<($($T::Serializer,)+)>;
            fn create_serializer(config: &SerializerConfig) -> Result<Self::Serializer> {
                Ok(s::TupleSerializer(($($T::create_serializer(config)?,)+)))
            }
            fn description() -> TypeDescription {
                let fields = vec![$(FieldDescription { name: concat!("f", $i).to_owned(), description: $T::description() }),+];
                let names: Vec<&str> = fields.iter().map(|f| f.description.name()).collect();
                let name = if names.len() == 1 { format!("({},)", names[0]) } else { format!("({})", names.join(", ")) };
                let key_type = fields.iter().all(|f| f.description.is_key_type());
                TypeDescription::composite(name, TypeKind::Tuple, fields, key_type)
            }
        }
        impl<$($T: Comparable),+> Comparable for ($($T,)+) {
            type Comparator = s::TupleComparator<($($T::Comparator,)+)>;
            fn comparator() -> Self::Comparator {
                s::TupleComparator(($($T::comparator(),)+))
            }
        }
        impl<$($T: KeyType),+> KeyType for ($($T,)+) {}
    };
}

tuple!((T0, 0));
tuple!((T0, 0), (T1, 1));
tuple!((T0, 0), (T1, 1), (T2, 2));
tuple!((T0, 0), (T1, 1), (T2, 2), (T3, 3));
tuple!((T0, 0), (T1, 1), (T2, 2), (T3, 3), (T4, 4));
tuple!((T0, 0), (T1, 1), (T2, 2), (T3, 3), (T4, 4), (T5, 5));
tuple!(
    (T0, 0),
    (T1, 1),
    (T2, 2),
    (T3, 3),
    (T4, 4),
    (T5, 5),
    (T6, 6)
);
tuple!(
    (T0, 0),
    (T1, 1),
    (T2, 2),
    (T3, 3),
    (T4, 4),
    (T5, 5),
    (T6, 6),
    (T7, 7)
);
tuple!(
    (T0, 0),
    (T1, 1),
    (T2, 2),
    (T3, 3),
    (T4, 4),
    (T5, 5),
    (T6, 6),
    (T7, 7),
    (T8, 8)
);
tuple!(
    (T0, 0),
    (T1, 1),
    (T2, 2),
    (T3, 3),
    (T4, 4),
    (T5, 5),
    (T6, 6),
    (T7, 7),
    (T8, 8),
    (T9, 9)
);
tuple!(
    (T0, 0),
    (T1, 1),
    (T2, 2),
    (T3, 3),
    (T4, 4),
    (T5, 5),
    (T6, 6),
    (T7, 7),
    (T8, 8),
    (T9, 9),
    (T10, 10)
);
tuple!(
    (T0, 0),
    (T1, 1),
    (T2, 2),
    (T3, 3),
    (T4, 4),
    (T5, 5),
    (T6, 6),
    (T7, 7),
    (T8, 8),
    (T9, 9),
    (T10, 10),
    (T11, 11)
);

#[cfg(feature = "rust_decimal")]
impl TypeInfo for rust_decimal::Decimal {
    type Serializer = s::RustDecimalSerializer;
    fn create_serializer(_: &SerializerConfig) -> Result<Self::Serializer> {
        Ok(s::RustDecimalSerializer)
    }
    fn description() -> TypeDescription {
        TypeDescription::atomic("Decimal", TypeKind::Decimal, false)
    }
}

#[cfg(feature = "bigdecimal")]
impl TypeInfo for bigdecimal::BigDecimal {
    type Serializer = s::BigDecimalSerializer;
    fn create_serializer(_: &SerializerConfig) -> Result<Self::Serializer> {
        Ok(s::BigDecimalSerializer)
    }
    fn description() -> TypeDescription {
        TypeDescription::atomic("BigDecimal", TypeKind::Decimal, false)
    }
}
