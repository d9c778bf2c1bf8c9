//! Serializer snapshots rendered as the types people write: `Vec<i64>`, `Option<demo.Order>`,
//! and the definitions of the structs and enums they name.

use std::collections::BTreeMap;

use typeinfo::kinds;
use typeinfo::{parse_enum_payload, parse_struct_payload, SerializerSnapshot};

/// The type a snapshot describes, as a Rust type (`Vec<i64>`, `demo.Order`).
pub fn type_of(snapshot: &SerializerSnapshot) -> String {
    snapshot.type_name()
}

/// Adds the definition of every struct and enum `snapshot` names (itself and nested) to
/// `out`, by type name: `demo.Order { user: String, amount_cents: i32 }`,
/// `demo.Event { Click { x: i32 }, Tick(u64), Stop }`.
pub fn collect_definitions(snapshot: &SerializerSnapshot, out: &mut BTreeMap<String, String>) {
    match snapshot.kind() {
        kinds::STRUCT => {
            if let Ok((name, fields)) = parse_struct_payload(snapshot) {
                if !out.contains_key(&name) {
                    let body = fields_of(&fields, snapshot.nested());
                    out.insert(name.clone(), format!("{name}{body}"));
                }
            }
        }
        kinds::ENUM => {
            if let Ok((name, variants)) = parse_enum_payload(snapshot) {
                if !out.contains_key(&name) {
                    let body: Vec<String> = variants
                        .iter()
                        .zip(snapshot.nested())
                        .map(|(variant, s)| {
                            let fields =
                                parse_struct_payload(s).map(|(_, f)| f).unwrap_or_default();
                            format!("{variant}{}", fields_of(&fields, s.nested()))
                        })
                        .collect();
                    out.insert(name.clone(), format!("{name} {{ {} }}", body.join(", ")));
                }
                // The variants' fields, not the variants (they are not types of their own).
                for variant in snapshot.nested() {
                    for field in variant.nested() {
                        collect_definitions(field, out);
                    }
                }
                return;
            }
        }
        _ => {}
    }
    for nested in snapshot.nested() {
        collect_definitions(nested, out);
    }
}

/// ` { a: T, b: U }`, `(T, U)` for positional fields (`0`, `1`, ...), or nothing.
fn fields_of(names: &[String], snapshots: &[SerializerSnapshot]) -> String {
    if names.is_empty() {
        return String::new();
    }
    let positional = names
        .iter()
        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let types = snapshots.iter().map(type_of);
    if positional {
        format!("({})", types.collect::<Vec<_>>().join(", "))
    } else {
        let fields: Vec<String> = names
            .iter()
            .zip(types)
            .map(|(n, t)| format!("{n}: {t}"))
            .collect();
        format!(" {{ {} }}", fields.join(", "))
    }
}
