//! [`Value`]s written as JSON, one line per entry of a dump.
//!
//! The mapping, chosen so that every value has one JSON form and nothing is lost silently:
//!
//! | value | JSON |
//! |---|---|
//! | `()` | `null` |
//! | bools, integers up to 64 bits | booleans, numbers |
//! | `u128`, `i128` | numbers when they fit in 64 bits, else decimal strings |
//! | `f32`, `f64` | numbers; `"NaN"`, `"inf"`, `"-inf"` as strings |
//! | `char`, `String` | strings |
//! | lists, sets, arrays, tuples | arrays |
//! | maps | arrays of `[key, value]` pairs (keys need not be strings) |
//! | `Option` | `null` or the value |
//! | structs | objects of their fields, in declaration order |
//! | enums | `{"Variant": {fields}}`, or `"Variant"` for a variant without fields |
//! | `Duration`, `SystemTime` | `{"secs": s, "nanos": n}` |
//! | decimals | strings (`"12.50"`) |
//! | serde-bridged bytes | `{"opaque": "<hex>"}` |

use std::fmt::Write as _;

use typeinfo::Value;

/// Appends the JSON form of `value` to `out`.
pub fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Unit => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Char(c) => write_string(c.encode_utf8(&mut [0; 4]), out),
        Value::U8(n) => push(out, n),
        Value::U16(n) => push(out, n),
        Value::U32(n) => push(out, n),
        Value::U64(n) => push(out, n),
        Value::I8(n) => push(out, n),
        Value::I16(n) => push(out, n),
        Value::I32(n) => push(out, n),
        Value::I64(n) => push(out, n),
        Value::U128(n) => match u64::try_from(*n) {
            Ok(n) => push(out, &n),
            Err(_) => write_string(&n.to_string(), out),
        },
        Value::I128(n) => match i64::try_from(*n) {
            Ok(n) => push(out, &n),
            Err(_) => write_string(&n.to_string(), out),
        },
        Value::F32(x) => write_float(f64::from(*x), out),
        Value::F64(x) => write_float(*x, out),
        Value::String(s) => write_string(s, out),
        Value::List(items) | Value::Set(items) | Value::Array(items) | Value::Tuple(items) => {
            write_array(items.iter(), out, write_value);
        }
        Value::Map(entries) => write_array(entries.iter(), out, |(k, v), out| {
            out.push('[');
            write_value(k, out);
            out.push(',');
            write_value(v, out);
            out.push(']');
        }),
        Value::Option(None) => out.push_str("null"),
        Value::Option(Some(v)) => write_value(v, out),
        Value::Duration(d) => {
            let _ = write!(
                out,
                "{{\"secs\":{},\"nanos\":{}}}",
                d.as_secs(),
                d.subsec_nanos()
            );
        }
        Value::SystemTime { secs, nanos } => {
            let _ = write!(out, "{{\"secs\":{secs},\"nanos\":{nanos}}}");
        }
        Value::Decimal { scale, unscaled } => write_string(&decimal(*scale, unscaled), out),
        Value::Struct { fields, .. } => write_object(fields, out),
        Value::Enum {
            variant, fields, ..
        } => {
            if fields.is_empty() {
                write_string(variant, out);
            } else {
                out.push('{');
                write_string(variant, out);
                out.push(':');
                write_object(fields, out);
                out.push('}');
            }
        }
        Value::Opaque(bytes) => {
            out.push_str("{\"opaque\":\"");
            for b in bytes {
                let _ = write!(out, "{b:02x}");
            }
            out.push_str("\"}");
        }
        // `Value` is non-exhaustive: a variant added later is written by its debug form
        // rather than dropped.
        other => write_string(&format!("{other:?}"), out),
    }
}

fn push(out: &mut String, n: &impl std::fmt::Display) {
    let _ = write!(out, "{n}");
}

fn write_float(x: f64, out: &mut String) {
    if x.is_nan() {
        write_string("NaN", out);
    } else if x.is_infinite() {
        write_string(if x > 0.0 { "inf" } else { "-inf" }, out);
    } else {
        // `{:?}` keeps the shortest form that reads back and a `.0` on whole numbers;
        // it writes `1e300` for large ones, which is JSON too.
        let _ = write!(out, "{x:?}");
    }
}

fn write_array<T>(
    items: impl Iterator<Item = T>,
    out: &mut String,
    write: impl Fn(T, &mut String),
) {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(item, out);
    }
    out.push(']');
}

fn write_object(fields: &[(std::sync::Arc<str>, Value)], out: &mut String) {
    out.push('{');
    for (i, (name, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(name, out);
        out.push(':');
        write_value(value, out);
    }
    out.push('}');
}

/// Appends `s` as a JSON string (RFC 8259 escapes).
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `unscaled * 10^-scale` in decimal notation; the unscaled value is big-endian two's
/// complement of any length.
fn decimal(scale: i64, unscaled: &[u8]) -> String {
    let negative = unscaled.first().is_some_and(|b| b & 0x80 != 0);
    // The magnitude's big-endian bytes (two's complement negated when negative).
    let mut magnitude: Vec<u8> = if negative {
        let mut m: Vec<u8> = unscaled.iter().map(|b| !b).collect();
        for b in m.iter_mut().rev() {
            let (v, carry) = b.overflowing_add(1);
            *b = v;
            if !carry {
                break;
            }
        }
        m
    } else {
        unscaled.to_vec()
    };
    // Decimal digits by repeated division by 10 (any length).
    let mut digits = Vec::new();
    while magnitude.iter().any(|&b| b != 0) {
        let mut rem = 0u32;
        for b in magnitude.iter_mut() {
            let cur = (rem << 8) | u32::from(*b);
            *b = (cur / 10) as u8;
            rem = cur % 10;
        }
        digits.push(b'0' + rem as u8);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    let mut digits = String::from_utf8(digits).unwrap_or_default();
    if scale > 0 {
        let scale = usize::try_from(scale).unwrap_or(usize::MAX);
        if scale > 4096 {
            return format!("{}{digits}e-{scale}", if negative { "-" } else { "" });
        }
        if digits.len() <= scale {
            digits = format!("{}{digits}", "0".repeat(scale - digits.len() + 1));
        }
        digits.insert(digits.len() - scale, '.');
    } else if scale < 0 {
        digits.push_str(&format!("e{}", -scale));
    }
    if negative {
        digits.insert(0, '-');
    }
    digits
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;

    fn json(v: &Value) -> String {
        let mut s = String::new();
        write_value(v, &mut s);
        s
    }

    #[test]
    fn values_have_one_json_form() {
        let v = Value::Struct {
            name: Arc::from("demo.Order"),
            fields: vec![
                (Arc::from("user"), Value::String("a\"b\n".into())),
                (Arc::from("amount"), Value::I32(-5)),
                (
                    Arc::from("tags"),
                    Value::List(vec![Value::U8(1), Value::U8(2)]),
                ),
                (Arc::from("coupon"), Value::Option(None)),
                (Arc::from("big"), Value::U128(u128::MAX)),
                (Arc::from("ratio"), Value::F64(1.0)),
                (Arc::from("nan"), Value::F32(f32::NAN)),
            ],
        };
        assert_eq!(
            json(&v),
            r#"{"user":"a\"b\n","amount":-5,"tags":[1,2],"coupon":null,"big":"340282366920938463463374607431768211455","ratio":1.0,"nan":"NaN"}"#
        );
        let e = Value::Enum {
            name: Arc::from("E"),
            index: 1,
            variant: Arc::from("Tick"),
            fields: vec![(Arc::from("0"), Value::U64(3))],
        };
        assert_eq!(json(&e), r#"{"Tick":{"0":3}}"#);
        let m = Value::Map(vec![(Value::I64(1), Value::Unit)]);
        assert_eq!(json(&m), "[[1,null]]");
        assert_eq!(json(&Value::Char('\u{1}')), r#""\u0001""#);
    }

    #[test]
    fn decimals_are_written_exactly() {
        assert_eq!(decimal(2, &[0x04, 0xe2]), "12.50");
        assert_eq!(decimal(2, &[0xfb, 0x1e]), "-12.50");
        assert_eq!(decimal(3, &[0x05]), "0.005");
        assert_eq!(decimal(0, &[]), "0");
        assert_eq!(decimal(-2, &[0x07]), "7e2");
    }
}
