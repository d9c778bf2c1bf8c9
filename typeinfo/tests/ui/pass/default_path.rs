// `default = "path"`: the value of a skipped field, and of a field that old bytes lack,
// comes from the function; `default` alone uses `Default::default()`.
use typeinfo::{from_bytes, to_bytes, TypeInfo};

fn ten() -> u32 {
    10
}

mod defaults {
    pub fn currency() -> String {
        "EUR".to_owned()
    }
}

#[derive(TypeInfo, Debug, PartialEq)]
struct Price {
    cents: i64,
    #[typeinfo(default = "defaults::currency")]
    currency: String,
    #[typeinfo(skip, default = "ten")]
    scale: u32,
    #[typeinfo(default)]
    note: String,
}

fn main() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Price>()?;
    let price = Price { cents: 250, currency: "USD".to_owned(), scale: 3, note: "x".to_owned() };
    let back = from_bytes(&s, &to_bytes(&s, &price)?)?;
    assert_eq!(back, Price { scale: 10, ..price });
    Ok(())
}
