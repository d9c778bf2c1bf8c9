//! The serde bridge under deep and hostile input: postcard has no depth limit, so a
//! recursive serde type read from a megabyte of `Array` tags recursed a million levels and
//! overflowed the stack. Reads now spend the depth budget of the rest of the library, and
//! writing a value too deep to read back is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use serde::{Deserialize, Serialize};
use typeinfo::{
    from_bytes, to_bytes, DataInputView, DataOutputView, Error, SerializerConfig, TypeInfo,
    TypeSerializer, DEFAULT_MAX_DEPTH,
};

/// A serde type that recurses: two levels of serde nesting per `Array` (the variant's
/// content, then the element).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
enum Json {
    Null,
    Array(Vec<Json>),
}
typeinfo::generic_type!(Json, name = "typeinfo.test.Json");

fn nested(levels: usize) -> Json {
    let mut j = Json::Null;
    for _ in 0..levels {
        j = Json::Array(vec![j]);
    }
    j
}

/// Drops a deep value without recursing.
fn dismantle(j: Json) {
    let mut stack = vec![j];
    while let Some(j) = stack.pop() {
        if let Json::Array(items) = j {
            stack.extend(items);
        }
    }
}

fn on_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic")
}

fn depth_error<T: std::fmt::Debug>(r: &typeinfo::Result<T>, limit: usize) -> bool {
    matches!(r, Err(Error::DepthLimitExceeded { limit: l }) if *l == limit)
}

#[test]
fn a_megabyte_of_nesting_is_an_error_naming_the_limit() {
    let r = on_stack(|| {
        let s = typeinfo::serializer::<Json>().expect("serializer");
        // postcard: variant 1 (`Array`), a length of 1, ... then variant 0 (`Null`).
        let mut payload = [1u8, 1].repeat(1 << 19);
        payload.push(0);
        let mut out = DataOutputView::new();
        out.write_len_prefixed(&payload);
        from_bytes(&s, out.as_slice()).map(dismantle)
    });
    assert!(depth_error(&r, DEFAULT_MAX_DEPTH), "{r:?}");
}

#[test]
fn values_within_the_budget_round_trip_and_deeper_ones_are_refused_when_written() {
    let (at_limit, too_deep, hostile_small) = on_stack(|| {
        let s = typeinfo::serializer::<Json>().expect("serializer");
        // Two levels per `Array`: 256 of them spend the 512 levels.
        let value = nested(DEFAULT_MAX_DEPTH / 2);
        let at_limit = to_bytes(&s, &value)
            .and_then(|b| from_bytes(&s, &b))
            .map(|back| {
                let same = back == value;
                dismantle(back);
                same
            });
        dismantle(value);
        let deeper = nested(DEFAULT_MAX_DEPTH / 2 + 1);
        let too_deep = to_bytes(&s, &deeper).map(|_| ());
        dismantle(deeper);
        // A smaller budget from the config holds for reads and writes alike.
        let config = SerializerConfig::new().with_max_depth(8);
        let small = <Json as TypeInfo>::create_serializer(&config).expect("serializer");
        let bytes = to_bytes(&s, &nested(5)).expect("written with the default budget");
        let hostile_small = (
            from_bytes(&small, &bytes).map(dismantle),
            to_bytes(&small, &nested(5)).map(|_| ()),
            to_bytes(&small, &nested(4)).map(|_| ()),
        );
        (at_limit, too_deep, hostile_small)
    });
    assert_eq!(at_limit, Ok(true));
    assert!(depth_error(&too_deep, DEFAULT_MAX_DEPTH), "{too_deep:?}");
    let (read, write, fits) = hostile_small;
    assert!(depth_error(&read, 8), "{read:?}");
    assert!(depth_error(&write, 8), "{write:?}");
    assert_eq!(fits, Ok(()));
}

#[test]
fn the_bridge_spends_what_the_view_has_left() {
    // Inside a recursive value the serde value nests from the levels left: a view with 4
    // levels reads 2 `Array`s and not 3.
    let s = typeinfo::serializer::<Json>().expect("serializer");
    let two = to_bytes(&s, &nested(2)).expect("bytes");
    let three = to_bytes(&s, &nested(3)).expect("bytes");
    let mut input = DataInputView::new(&two).with_max_depth(4);
    assert_eq!(s.deserialize(&mut input), Ok(nested(2)));
    let mut input = DataInputView::new(&three).with_max_depth(4);
    assert!(depth_error(&s.deserialize(&mut input), 4));
}
