//! Every built-in serializer: primitives, strings and bytes, sequences, arrays, options,
//! tuples, pointers, maps, sets, time, decimals, varints and the serde fallback, each with
//! the restored reader of its snapshot.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use typeinfo::{
    VarI16Serializer, VarI32Serializer, VarI64Serializer, VarU16Serializer, VarU32Serializer,
    VarU64Serializer,
};

use crate::harness::Sub;
use crate::mutate::Nest;
use crate::targets::typed::{sub, sub_with};
use crate::values::{Arb, Gen};

/// A serde type behind the generic fallback.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Legacy {
    tags: Vec<String>,
    score: Option<i64>,
}
typeinfo::generic_type!(Legacy, name = "typeinfo.fuzz.Legacy");

impl Arb for Legacy {
    fn arb(g: &mut Gen) -> Self {
        Legacy {
            tags: Vec::arb(g),
            score: Option::arb(g),
        }
    }
}

/// Builds the sub-targets.
pub fn build(g: &mut Gen) -> Result<Vec<Sub>, String> {
    let option_nest = Nest {
        open: vec![1],
        leaf: vec![0],
        close: vec![],
    };
    let list_nest = Nest {
        open: vec![1],
        leaf: vec![0],
        close: vec![],
    };
    Ok(vec![
        sub::<bool>(g)?,
        sub::<char>(g)?,
        sub::<u8>(g)?,
        sub::<u16>(g)?,
        sub::<u32>(g)?,
        sub::<u64>(g)?,
        sub::<u128>(g)?,
        sub::<i8>(g)?,
        sub::<i16>(g)?,
        sub::<i32>(g)?,
        sub::<i64>(g)?,
        sub::<i128>(g)?,
        sub::<f32>(g)?,
        sub::<f64>(g)?,
        sub::<()>(g)?,
        sub::<String>(g)?,
        sub::<bytes::Bytes>(g)?,
        sub::<Vec<u8>>(g)?,
        sub::<Vec<u64>>(g)?,
        sub::<Vec<f32>>(g)?,
        sub::<Vec<bool>>(g)?,
        sub::<Vec<char>>(g)?,
        sub::<Vec<String>>(g)?,
        sub::<Vec<()>>(g)?,
        sub::<Vec<Vec<()>>>(g)?,
        sub::<Vec<Vec<u16>>>(g)?,
        sub::<VecDeque<i32>>(g)?,
        sub::<[u8; 16]>(g)?,
        sub::<[u64; 4]>(g)?,
        sub::<[String; 3]>(g)?,
        sub::<[(); 8]>(g)?,
        sub::<[Option<bool>; 5]>(g)?,
        sub::<Option<u32>>(g)?,
        sub::<Option<String>>(g)?,
        sub_with::<Option<Option<Option<u8>>>, _>(
            "Option<Option<Option<u8>>>",
            typeinfo::serializer::<Option<Option<Option<u8>>>>().map_err(|e| e.to_string())?,
            g,
            vec![option_nest],
        )?,
        sub::<(u8,)>(g)?,
        sub::<(u8, String)>(g)?,
        sub::<(i64, f64, bool, char)>(g)?,
        sub::<(u8, u16, u32, u64, i8, i16, i32, i64, String, bool, char, ())>(g)?,
        sub::<Box<String>>(g)?,
        sub::<Arc<Vec<u16>>>(g)?,
        sub::<HashMap<String, i64>>(g)?,
        sub::<BTreeMap<u32, String>>(g)?,
        sub::<BTreeMap<String, Vec<u8>>>(g)?,
        sub::<HashSet<u32>>(g)?,
        sub::<BTreeSet<String>>(g)?,
        sub::<BTreeSet<()>>(g)?,
        sub::<BTreeMap<(), ()>>(g)?,
        sub_with::<Vec<Vec<Vec<u8>>>, _>(
            "Vec<Vec<Vec<u8>>>",
            typeinfo::serializer::<Vec<Vec<Vec<u8>>>>().map_err(|e| e.to_string())?,
            g,
            vec![list_nest],
        )?,
        sub::<Duration>(g)?,
        sub::<SystemTime>(g)?,
        sub::<Option<Duration>>(g)?,
        sub::<rust_decimal::Decimal>(g)?,
        sub::<bigdecimal::BigDecimal>(g)?,
        sub::<Vec<rust_decimal::Decimal>>(g)?,
        sub_with::<u16, _>("varint u16", VarU16Serializer, g, Vec::new())?,
        sub_with::<u32, _>("varint u32", VarU32Serializer, g, Vec::new())?,
        sub_with::<u64, _>("varint u64", VarU64Serializer, g, Vec::new())?,
        sub_with::<i16, _>("varint i16", VarI16Serializer, g, Vec::new())?,
        sub_with::<i32, _>("varint i32", VarI32Serializer, g, Vec::new())?,
        sub_with::<i64, _>("varint i64", VarI64Serializer, g, Vec::new())?,
        sub::<Legacy>(g)?,
    ])
}
