//! The type-free (restored) reader and snapshots under hostile input: recursion spends the
//! depth budget, 512 levels fit a small stack, snapshots whose recursion has no way out are
//! refused, and snapshots too deep to read back are refused when written.
//!
//! Reads that could overflow the stack run on a thread with a 2 MiB stack: an overflow
//! aborts the whole test process (before the fix, these tests did).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use typeinfo_serializers::*;

const MIB: usize = 1 << 20;

fn on_stack<R: Send + 'static>(stack: usize, f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic")
}

fn name_payload(name: &str) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_len_prefixed(name.as_bytes());
    out.into_inner()
}

fn named(
    kind: &str,
    name: &str,
    parts: &[&str],
    nested: Vec<SerializerSnapshot>,
) -> SerializerSnapshot {
    let mut out = DataOutputView::new();
    out.write_len_prefixed(name.as_bytes());
    payload::write_names(&mut out, parts.iter().copied());
    SerializerSnapshot::new(kind, 1)
        .with_payload(out.into_inner())
        .with_nested(nested)
}

fn recursive(name: &str) -> SerializerSnapshot {
    SerializerSnapshot::new(kinds::RECURSIVE, 1).with_payload(name_payload(name))
}

/// `enum Tree { Leaf, Node(Box<Tree>, Box<Tree>) }` as the derive writes it.
fn tree() -> SerializerSnapshot {
    named(
        kinds::ENUM,
        "Tree",
        &["Leaf", "Node"],
        vec![
            named(kinds::STRUCT, "Leaf", &[], vec![]),
            named(
                kinds::STRUCT,
                "Node",
                &["0", "1"],
                vec![recursive("Tree"), recursive("Tree")],
            ),
        ],
    )
}

/// `struct Chain { value: i32, next: Option<Box<Chain>> }` as the derive writes it.
fn chain() -> SerializerSnapshot {
    named(
        kinds::STRUCT,
        "Chain",
        &["value", "next"],
        vec![
            SerializerSnapshot::new(kinds::I32, 1),
            SerializerSnapshot::new(kinds::OPTION, 1).with_nested(vec![recursive("Chain")]),
        ],
    )
}

/// The bytes of a tree whose left spine is `depth` nodes deep.
fn spine_bytes(depth: usize) -> Vec<u8> {
    let mut bytes = vec![1u8; depth];
    bytes.extend(std::iter::repeat_n(0u8, depth + 1));
    bytes
}

fn chain_bytes(depth: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    for _ in 0..depth {
        bytes.extend_from_slice(&[5, 0, 0, 0, 1]);
    }
    bytes.extend_from_slice(&[5, 0, 0, 0, 0]);
    bytes
}

fn is_depth_error<T: std::fmt::Debug>(r: &Result<T>) -> bool {
    matches!(r, Err(Error::DepthLimitExceeded { limit }) if *limit == DEFAULT_MAX_DEPTH)
}

/// Drops a deep value on the heap's terms (the derived `Drop` of `Value` recurses).
fn dismantle(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Enum { fields, .. } | Value::Struct { fields, .. } => {
                stack.extend(fields.into_iter().map(|(_, v)| v))
            }
            Value::Option(Some(b)) => stack.push(*b),
            _ => {}
        }
    }
}

#[test]
fn the_restored_reader_reads_the_default_depth_on_a_2_mib_stack() {
    let results = on_stack(2 * MIB, || {
        let registry = SnapshotRegistry::default();
        let tree = registry.restore(&tree()).expect("restore tree");
        let chain = registry.restore(&chain()).expect("restore chain");
        let spine = spine_bytes(DEFAULT_MAX_DEPTH);
        let links = chain_bytes(DEFAULT_MAX_DEPTH);
        let read = |s: &RestoredSerializer, b: &[u8]| from_bytes(s, b).map(dismantle);
        let skip = |s: &RestoredSerializer, b: &[u8]| {
            let mut input = DataInputView::new(b);
            s.skip(&mut input).map(|()| input.is_empty())
        };
        let copy = |s: &RestoredSerializer, b: &[u8]| {
            let mut out = DataOutputView::new();
            s.copy_serialized(&mut DataInputView::new(b), &mut out)
                .map(|()| out.as_slice() == b)
        };
        let ok = [
            read(&tree, &spine).map(|()| true),
            skip(&tree, &spine),
            copy(&tree, &spine),
            read(&chain, &links).map(|()| true),
            skip(&chain, &links),
            copy(&chain, &links),
        ];
        let deeper = [
            read(&tree, &spine_bytes(DEFAULT_MAX_DEPTH + 1)).map(|()| true),
            skip(&tree, &spine_bytes(DEFAULT_MAX_DEPTH + 1)),
            read(&chain, &chain_bytes(DEFAULT_MAX_DEPTH + 1)).map(|()| true),
            skip(&chain, &chain_bytes(DEFAULT_MAX_DEPTH + 1)),
            read(&tree, &vec![1u8; MIB]).map(|()| true),
            skip(&tree, &vec![1u8; MIB]),
        ];
        // Writing a value deeper than the limit is refused too.
        let deep_value = from_bytes(&chain, &chain_bytes(DEFAULT_MAX_DEPTH)).expect("read");
        let written = to_bytes(&chain, &deep_value);
        let too_deep = Value::Struct {
            name: "Chain".into(),
            fields: vec![
                ("value".into(), Value::I32(5)),
                ("next".into(), Value::Option(Some(Box::new(deep_value)))),
            ],
        };
        let refused = to_bytes(&chain, &too_deep).map(|_| ());
        dismantle(too_deep);
        (
            ok,
            deeper,
            written.map(|b| b == chain_bytes(DEFAULT_MAX_DEPTH)),
            refused,
        )
    });
    let (ok, deeper, written, refused) = results;
    for (i, r) in ok.iter().enumerate() {
        assert_eq!(r, &Ok(true), "case {i}");
    }
    for (i, r) in deeper.iter().enumerate() {
        assert!(is_depth_error(r), "case {i}: {r:?}");
    }
    assert_eq!(written, Ok(true));
    assert!(is_depth_error(&refused), "{refused:?}");
}

#[test]
fn a_view_can_lower_or_raise_its_depth_limit() -> Result<()> {
    let tree = SnapshotRegistry::default().restore(&tree())?;
    let bytes = spine_bytes(10);
    let mut input = DataInputView::new(&bytes).with_max_depth(9);
    assert_eq!(
        tree.deserialize(&mut input),
        Err(Error::DepthLimitExceeded { limit: 9 })
    );
    let mut input = DataInputView::new(&bytes).with_max_depth(10);
    assert!(tree.deserialize(&mut input).is_ok());
    assert_eq!(DataInputView::new(&bytes).max_depth(), DEFAULT_MAX_DEPTH);
    Ok(())
}

#[test]
fn recursion_with_no_way_out_is_a_corrupt_snapshot() {
    let registry = SnapshotRegistry::default();
    let refuse = |s: SerializerSnapshot| {
        let restored = registry.restore(&s);
        assert!(
            matches!(&restored, Err(Error::CorruptSnapshot(m)) if m.contains("recursi")),
            "{restored:?}"
        );
        let bytes = s.to_bytes().expect("shallow");
        let read = SerializerSnapshot::from_bytes(&bytes);
        assert!(
            matches!(&read, Err(Error::CorruptSnapshot(m)) if m.contains("recursi")),
            "{read:?}"
        );
    };
    // `struct N { next: N }`, through a tuple, through an array of one.
    refuse(named(kinds::STRUCT, "N", &["next"], vec![recursive("N")]));
    refuse(named(
        kinds::STRUCT,
        "N",
        &["next"],
        vec![SerializerSnapshot::new(kinds::TUPLE, 1).with_nested(vec![recursive("N")])],
    ));
    let mut one = DataOutputView::new();
    one.write_varint(1);
    refuse(named(
        kinds::STRUCT,
        "N",
        &["next"],
        vec![SerializerSnapshot::new(kinds::ARRAY, 1)
            .with_payload(one.into_inner())
            .with_nested(vec![recursive("N")])],
    ));
    // Through another struct: `A { b: B }`, `B { a: A }`.
    refuse(named(
        kinds::STRUCT,
        "A",
        &["b"],
        vec![named(kinds::STRUCT, "B", &["a"], vec![recursive("A")])],
    ));
    // An option, a collection or an enum variant between is a way out.
    for list in [kinds::LIST, kinds::SET, kinds::OPTION] {
        let s = named(
            kinds::STRUCT,
            "N",
            &["next"],
            vec![SerializerSnapshot::new(list, 1).with_nested(vec![recursive("N")])],
        );
        assert!(registry.restore(&s).is_ok(), "{list}");
        assert_eq!(
            SerializerSnapshot::from_bytes(&s.to_bytes().expect("shallow")),
            Ok(s)
        );
    }
    let map = SerializerSnapshot::new(kinds::MAP, 1)
        .with_nested(vec![SerializerSnapshot::new(kinds::U8, 1), recursive("N")]);
    assert!(registry
        .restore(&named(kinds::STRUCT, "N", &["next"], vec![map]))
        .is_ok());
    assert!(registry.restore(&tree()).is_ok());
    assert!(registry.restore(&chain()).is_ok());
}

/// An option nested `levels` deep around a `u8`.
fn options(levels: usize) -> SerializerSnapshot {
    let mut s = SerializerSnapshot::new(kinds::U8, 1);
    for _ in 0..levels {
        s = SerializerSnapshot::new(kinds::OPTION, 1).with_nested(vec![s]);
    }
    s
}

#[test]
fn snapshots_too_deep_to_read_back_are_refused_when_written() -> Result<()> {
    // What is written reads back ...
    let deepest = options(MAX_SNAPSHOT_DEPTH);
    assert_eq!(
        SerializerSnapshot::from_bytes(&deepest.to_bytes()?)?,
        deepest
    );
    // ... and what would not read back is not written.
    assert_eq!(
        options(MAX_SNAPSHOT_DEPTH + 1).to_bytes(),
        Err(Error::DepthLimitExceeded {
            limit: MAX_SNAPSHOT_DEPTH
        })
    );
    assert!(options(66).write_to(&mut DataOutputView::new()).is_err());
    let mut vecs = SerializerSnapshot::new(kinds::U8, 1);
    for _ in 0..65 {
        vecs = SerializerSnapshot::new(kinds::LIST, 1).with_nested(vec![vecs]);
    }
    assert!(matches!(
        vecs.to_bytes(),
        Err(Error::DepthLimitExceeded { .. })
    ));
    // Bytes one level deeper than the limit, written by hand, are still refused on read.
    let mut out = DataOutputView::new();
    out.write_bytes(&SNAPSHOT_MAGIC);
    out.write_u8(SNAPSHOT_FORMAT_VERSION);
    for level in 0..=MAX_SNAPSHOT_DEPTH + 1 {
        let leaf = level == MAX_SNAPSHOT_DEPTH + 1;
        out.write_len_prefixed(if leaf { b"u8" } else { b"option" });
        out.write_varint(1);
        out.write_len_prefixed(&[]);
        out.write_len(usize::from(!leaf));
    }
    let read = SerializerSnapshot::from_bytes(out.as_slice());
    assert!(
        matches!(&read, Err(Error::CorruptSnapshot(m)) if m.contains("deeper")),
        "{read:?}"
    );
    Ok(())
}

#[test]
fn the_depth_error_names_its_limit() {
    let e = Error::DepthLimitExceeded { limit: 512 };
    assert_eq!(e.to_string(), "nesting deeper than the depth limit of 512");
}

/// `enum Doc { Null, List(<lists> × list(Doc)) }`: `lists` list layouts between the enum
/// and its recursive reference.
fn doc_through_lists(lists: usize) -> SerializerSnapshot {
    let mut inner = recursive("Doc");
    for _ in 0..lists {
        inner = SerializerSnapshot::new(kinds::LIST, 1).with_nested(vec![inner]);
    }
    named(
        kinds::ENUM,
        "Doc",
        &["Null", "List"],
        vec![
            named(kinds::STRUCT, "Null", &[], vec![]),
            named(kinds::STRUCT, "List", &["0"], vec![inner]),
        ],
    )
}

/// A `doc_through_lists(lists)` value `levels` deep: each level the tag of `List` and a
/// length of one per list, then `Null`.
fn doc_bytes(lists: usize, levels: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    for _ in 0..levels {
        bytes.push(1);
        bytes.extend(std::iter::repeat_n(1u8, lists));
    }
    bytes.push(0);
    bytes
}

/// Drops a deep `Value` without recursing.
fn dismantle_lists(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Enum { fields, .. } | Value::Struct { fields, .. } => {
                stack.extend(fields.into_iter().map(|(_, v)| v))
            }
            Value::List(items) => stack.extend(items),
            Value::Option(Some(b)) => stack.push(*b),
            _ => {}
        }
    }
}

#[test]
fn layouts_between_recursion_points_spend_the_budget_and_the_stack_grows() {
    // A snapshot from outside with ten lists between `Doc` and itself: a level is eleven
    // layouts deep. Before, each level spent one unit of the budget, so 512 levels were
    // 5,632 layouts of stack and overflowed a 2 MiB thread (optimized build too).
    let results = on_stack(2 * MIB, || {
        let registry = SnapshotRegistry::default();
        let doc = registry.restore(&doc_through_lists(10)).expect("restore");
        // Eleven layouts per level spend three levels (one per `LAYOUTS_PER_LEVEL`).
        assert_eq!(LAYOUTS_PER_LEVEL, 4);
        let fits = DEFAULT_MAX_DEPTH / 3;
        let read = from_bytes(&doc, &doc_bytes(10, fits)).map(|v| {
            let back = to_bytes(&doc, &v).map(|b| b == doc_bytes(10, fits));
            dismantle_lists(v);
            back
        });
        let deeper = from_bytes(&doc, &doc_bytes(10, fits + 1)).map(dismantle_lists);
        let skipped = doc.skip(&mut DataInputView::new(&doc_bytes(10, 2000)));
        let megabyte = from_bytes(&doc, &vec![1u8; MIB]).map(dismantle_lists);
        (read, deeper, skipped, megabyte)
    });
    let (read, deeper, skipped, megabyte) = results;
    assert_eq!(read, Ok(Ok(true)));
    assert!(is_depth_error(&deeper), "{deeper:?}");
    assert!(is_depth_error(&skipped), "{skipped:?}");
    assert!(is_depth_error(&megabyte), "{megabyte:?}");
}

#[test]
fn a_level_of_up_to_four_layouts_spends_one_level_and_512_fit_a_2_mib_stack() {
    // A `Doc` through a list and through a map (as the derive writes
    // `enum Doc { Null, List(Vec<Doc>), Map(BTreeMap<String, Doc>) }`), 512 levels deep,
    // read, skipped and written back on a 2 MiB thread in every build (a debug build took
    // 4 KB of stack per level before: the stack now grows where the thread's runs short).
    let snapshot = named(
        kinds::ENUM,
        "Doc",
        &["Null", "List", "Map"],
        vec![
            named(kinds::STRUCT, "Null", &[], vec![]),
            named(
                kinds::STRUCT,
                "List",
                &["0"],
                vec![SerializerSnapshot::new(kinds::LIST, 1).with_nested(vec![recursive("Doc")])],
            ),
            named(
                kinds::STRUCT,
                "Map",
                &["0"],
                vec![SerializerSnapshot::new(kinds::MAP, 1).with_nested(vec![
                    SerializerSnapshot::new(kinds::STRING, 1),
                    recursive("Doc"),
                ])],
            ),
        ],
    );
    let bytes = |levels: usize| {
        let mut bytes = Vec::new();
        for level in 0..levels {
            if level % 2 == 0 {
                bytes.extend_from_slice(&[1, 1]);
            } else {
                bytes.extend_from_slice(&[2, 1, 1, b'k']);
            }
        }
        bytes.push(0);
        bytes
    };
    let (ok, deeper) = on_stack(2 * MIB, move || {
        let doc = SnapshotRegistry::default()
            .restore(&snapshot)
            .expect("restore");
        let at_limit = bytes(DEFAULT_MAX_DEPTH);
        let ok = from_bytes(&doc, &at_limit).map(|v| {
            let back = to_bytes(&doc, &v).map(|b| b == at_limit);
            let mut input = DataInputView::new(&at_limit);
            let skipped = doc.skip(&mut input).map(|()| input.is_empty());
            dismantle_maps(v);
            (back, skipped)
        });
        let deeper = from_bytes(&doc, &bytes(DEFAULT_MAX_DEPTH + 1)).map(dismantle_maps);
        (ok, deeper)
    });
    assert_eq!(ok, Ok((Ok(true), Ok(true))));
    assert!(is_depth_error(&deeper), "{deeper:?}");
}

/// Drops a deep `Value` of lists and maps without recursing.
fn dismantle_maps(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Enum { fields, .. } | Value::Struct { fields, .. } => {
                stack.extend(fields.into_iter().map(|(_, v)| v))
            }
            Value::List(items) => stack.extend(items),
            Value::Map(entries) => stack.extend(entries.into_iter().flat_map(|(k, v)| [k, v])),
            _ => {}
        }
    }
}
