//! Recursive types read from hostile bytes: every read of a recursive value spends a depth
//! budget, so a megabyte of `0x01` ends in an error naming the limit, not in a stack
//! overflow; values nested deeper than the budget are refused when written, so nothing is
//! written that cannot be read back.
//!
//! Reads that could overflow the stack run on a thread of their own with a 2 MiB stack
//! (the default of test threads; the default depth budget fits it in a debug build): a
//! stack overflow aborts the whole test process (before the depth budget, these tests
//! did).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use typeinfo::{
    from_bytes, kinds, payload, to_bytes, Compatibility, DataInputView, DataOutputView, Error,
    SerializerConfig, SerializerSnapshot, SnapshotRegistry, TypeInfo, TypeSerializer,
    DEFAULT_MAX_DEPTH,
};

#[derive(TypeInfo, Debug, Clone, PartialEq)]
enum Tree {
    Leaf,
    Node(Box<Tree>, Box<Tree>),
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
struct Chain {
    value: i32,
    next: Option<Box<Chain>>,
}

mod v2 {
    use typeinfo::TypeInfo;

    /// `Chain` with `value` widened: reading old bytes migrates at every level.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    pub struct Chain {
        pub value: i64,
        pub next: Option<Box<Chain>>,
    }

    /// `Holder` with its recursive field removed: old values of it are skipped with the
    /// restored (type-free) serializer.
    #[derive(TypeInfo, Debug, Clone, PartialEq)]
    #[typeinfo(name = "Holder")]
    pub struct Holder {
        pub id: i32,
    }
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
struct Holder {
    id: i32,
    tree: Tree,
}

/// Runs `f` on a thread with `stack` bytes of stack and returns its result.
fn on_small_stack<R: Send + 'static>(stack: usize, f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic")
}

/// A tree whose left spine is `depth` nodes deep.
fn left_spine(depth: usize) -> Tree {
    let mut t = Tree::Leaf;
    for _ in 0..depth {
        t = Tree::Node(Box::new(t), Box::new(Tree::Leaf));
    }
    t
}

/// A chain of `depth + 1` links. Each link's `next` is read through the recursive field's
/// serializer, the last one's (`None`) too: writing or reading it spends `depth + 1` levels.
fn chain(depth: usize) -> Chain {
    let mut c = Chain {
        value: 0,
        next: None,
    };
    for i in 0..depth {
        c = Chain {
            value: i as i32 + 1,
            next: Some(Box::new(c)),
        };
    }
    c
}

/// Drops a deep value without recursing (the derived `Drop` of `Box` recurses).
fn dismantle_tree(t: Tree) {
    let mut stack = vec![t];
    while let Some(t) = stack.pop() {
        if let Tree::Node(l, r) = t {
            stack.push(*l);
            stack.push(*r);
        }
    }
}

fn dismantle_chain(c: Chain) {
    let mut next = c.next;
    while let Some(c) = next {
        next = c.next;
    }
}

const MB: usize = 1 << 20;

fn depth_error(r: &typeinfo::Result<impl std::fmt::Debug>) -> bool {
    matches!(r, Err(Error::DepthLimitExceeded { limit }) if *limit == DEFAULT_MAX_DEPTH)
}

#[test]
fn a_megabyte_of_node_tags_is_an_error_naming_the_limit() {
    let (read, skip, copy, restored) = on_small_stack(2 * MB, || {
        let s = typeinfo::serializer::<Tree>().expect("serializer");
        let bytes = vec![0x01u8; MB];
        let read = from_bytes(&s, &bytes).map(dismantle_tree);
        let skip = s.skip(&mut DataInputView::new(&bytes));
        let copy = s.copy_serialized(&mut DataInputView::new(&bytes), &mut DataOutputView::new());
        let restored = SnapshotRegistry::default()
            .restore(&s.snapshot())
            .and_then(|r| r.deserialize(&mut DataInputView::new(&bytes)))
            .map(|_| ());
        (read, skip, copy, restored)
    });
    assert!(depth_error(&read), "{read:?}");
    assert!(depth_error(&skip), "{skip:?}");
    assert!(depth_error(&copy), "{copy:?}");
    assert!(depth_error(&restored), "{restored:?}");
    let message = read.err().map(|e| e.to_string());
    assert_eq!(
        message.as_deref(),
        Some("nesting deeper than the depth limit of 512")
    );
}

#[test]
fn values_at_the_limit_round_trip_and_deeper_ones_are_refused_when_written() {
    let (at_limit, too_deep) = on_small_stack(2 * MB, || {
        let s = typeinfo::serializer::<Tree>().expect("serializer");
        let tree = left_spine(DEFAULT_MAX_DEPTH);
        let at_limit = to_bytes(&s, &tree)
            .and_then(|b| from_bytes(&s, &b))
            .map(|back| {
                let same = back == tree;
                dismantle_tree(back);
                same
            });
        dismantle_tree(tree);
        let deeper = left_spine(DEFAULT_MAX_DEPTH + 1);
        let too_deep = to_bytes(&s, &deeper).map(|_| ());
        dismantle_tree(deeper);
        (at_limit, too_deep)
    });
    assert_eq!(at_limit, Ok(true));
    assert!(depth_error(&too_deep), "{too_deep:?}");
}

#[test]
fn the_depth_limit_is_configurable() -> typeinfo::Result<()> {
    let config = SerializerConfig::new().with_max_depth(3);
    assert_eq!(config.max_depth(), 3);
    assert_eq!(SerializerConfig::new().max_depth(), DEFAULT_MAX_DEPTH);
    let s = <Chain as TypeInfo>::create_serializer(&config)?;
    assert!(to_bytes(&s, &chain(2)).is_ok());
    assert!(matches!(
        to_bytes(&s, &chain(3)),
        Err(Error::DepthLimitExceeded { limit: 3 })
    ));
    // Bytes of a deeper chain (written with the default limit) are refused when read.
    let bytes = to_bytes(&typeinfo::serializer::<Chain>()?, &chain(3))?;
    assert!(matches!(
        from_bytes(&s, &bytes),
        Err(Error::DepthLimitExceeded { limit: 3 })
    ));
    // The view has a limit of its own: the smaller one holds.
    let default = typeinfo::serializer::<Chain>()?;
    let mut input = DataInputView::new(&bytes).with_max_depth(2);
    assert!(matches!(
        default.deserialize(&mut input),
        Err(Error::DepthLimitExceeded { limit: 2 })
    ));
    let mut out = DataOutputView::new().with_max_depth(2);
    assert!(matches!(
        default.serialize(&chain(4), &mut out),
        Err(Error::DepthLimitExceeded { limit: 2 })
    ));
    Ok(())
}

#[test]
fn migration_of_a_recursive_type_spends_the_depth_budget() {
    // A chain link is `value` (4 bytes) then an option tag `1`.
    let mut links = Vec::new();
    for _ in 0..100_000 {
        links.extend_from_slice(&[7, 0, 0, 0, 1]);
    }
    // A holder is `id` (4 bytes), then its tree: a megabyte of node tags.
    let mut holder = vec![7, 0, 0, 0];
    holder.extend(std::iter::repeat_n(0x01u8, MB));
    let (widened, removed) = on_small_stack(2 * MB, move || {
        let registry = SnapshotRegistry::default();
        let old = typeinfo::serializer::<Chain>()
            .expect("serializer")
            .snapshot();
        let widened = match typeinfo::serializer::<v2::Chain>()
            .expect("serializer")
            .resolve(&old, &registry)
        {
            Compatibility::AfterMigration(reader) => {
                reader.read(&mut DataInputView::new(&links)).map(|_| ())
            }
            other => panic!("expected a migration, got {other:?}"),
        };
        let old = typeinfo::serializer::<Holder>()
            .expect("serializer")
            .snapshot();
        let removed = match typeinfo::serializer::<v2::Holder>()
            .expect("serializer")
            .resolve(&old, &registry)
        {
            Compatibility::AfterMigration(reader) => {
                reader.read(&mut DataInputView::new(&holder)).map(|_| ())
            }
            other => panic!("expected a migration, got {other:?}"),
        };
        (widened, removed)
    });
    assert!(depth_error(&widened), "{widened:?}");
    assert!(depth_error(&removed), "{removed:?}");
}

#[test]
fn migration_reads_values_at_the_limit() -> typeinfo::Result<()> {
    let (kept, removed) = on_small_stack(2 * MB, || -> typeinfo::Result<_> {
        let registry = SnapshotRegistry::default();
        let old = typeinfo::serializer::<Chain>()?;
        // The deepest chain that can be written.
        let value = chain(DEFAULT_MAX_DEPTH - 1);
        assert!(to_bytes(&old, &chain(DEFAULT_MAX_DEPTH)).is_err());
        let bytes = to_bytes(&old, &value)?;
        dismantle_chain(value);
        let kept = match typeinfo::serializer::<v2::Chain>()?.resolve(&old.snapshot(), &registry) {
            Compatibility::AfterMigration(reader) => {
                reader.read(&mut DataInputView::new(&bytes))?
            }
            other => panic!("expected a migration, got {other:?}"),
        };
        let kept_value = kept.value;
        let mut next = kept.next;
        while let Some(c) = next {
            next = c.next;
        }
        let old = typeinfo::serializer::<Holder>()?;
        let value = Holder {
            id: 9,
            tree: left_spine(DEFAULT_MAX_DEPTH),
        };
        let bytes = to_bytes(&old, &value)?;
        dismantle_tree(value.tree);
        let removed =
            match typeinfo::serializer::<v2::Holder>()?.resolve(&old.snapshot(), &registry) {
                Compatibility::AfterMigration(reader) => {
                    reader.read(&mut DataInputView::new(&bytes))?
                }
                other => panic!("expected a migration, got {other:?}"),
            };
        Ok((kept_value, removed))
    })?;
    assert_eq!(kept, DEFAULT_MAX_DEPTH as i64 - 1);
    assert_eq!(removed, v2::Holder { id: 9 });
    Ok(())
}

/// `struct N { next: N }` as a snapshot: no option, collection or enum variant between
/// `N` and itself, so every value of it would be infinite.
fn unguarded_snapshot() -> SerializerSnapshot {
    let mut p = DataOutputView::new();
    p.write_len_prefixed(b"N");
    payload::write_names(&mut p, ["next"].into_iter());
    let mut r = DataOutputView::new();
    r.write_len_prefixed(b"N");
    SerializerSnapshot::new(kinds::STRUCT, 1)
        .with_payload(p.into_inner())
        .with_nested(vec![
            SerializerSnapshot::new(kinds::RECURSIVE, 1).with_payload(r.into_inner())
        ])
}

#[test]
fn a_recursive_snapshot_without_a_way_out_is_refused_as_corrupt() {
    #[derive(TypeInfo, Debug)]
    struct N {
        next: Option<Box<N>>,
    }
    let crafted = unguarded_snapshot();
    let restored = SnapshotRegistry::default().restore(&crafted);
    assert!(
        matches!(&restored, Err(Error::CorruptSnapshot(m)) if m.contains("recursi")),
        "{restored:?}"
    );
    let bytes = crafted.to_bytes().expect("the envelope is shallow");
    assert!(matches!(
        SerializerSnapshot::from_bytes(&bytes),
        Err(Error::CorruptSnapshot(_))
    ));
    let verdict = typeinfo::serializer::<N>()
        .expect("serializer")
        .resolve(&crafted, &SnapshotRegistry::default());
    assert!(
        matches!(verdict, Compatibility::Incompatible(_)),
        "{verdict:?}"
    );
    // The snapshot of the real `N` has an option between `N` and itself.
    let real = typeinfo::serializer::<N>().expect("serializer").snapshot();
    assert!(SnapshotRegistry::default().restore(&real).is_ok());
}

#[test]
fn migration_reads_exactly_what_today_s_serializer_writes() {
    // Around the limit, the v1 reader, the v1 -> v2 migration and v2's writer of the
    // migrated value agree on every depth. Before, the migration read one link more than
    // the writer could write back (it spent a level per link followed, not per `next`).
    let results = on_small_stack(2 * MB, || {
        let deep = SerializerConfig::new().with_max_depth(DEFAULT_MAX_DEPTH + 2);
        let writer = <Chain as TypeInfo>::create_serializer(&deep).expect("serializer");
        let v1 = typeinfo::serializer::<Chain>().expect("serializer");
        let v2 = typeinfo::serializer::<v2::Chain>().expect("serializer");
        let Compatibility::AfterMigration(migration) =
            v2.resolve(&v1.snapshot(), &SnapshotRegistry::default())
        else {
            panic!("expected a migration");
        };
        let mut results = Vec::new();
        for depth in DEFAULT_MAX_DEPTH - 2..=DEFAULT_MAX_DEPTH + 1 {
            let value = chain(depth);
            let mut out = DataOutputView::new().with_max_depth(DEFAULT_MAX_DEPTH + 2);
            writer
                .serialize(&value, &mut out)
                .expect("written with a larger limit");
            let bytes = out.into_inner();
            dismantle_chain(value);
            let read = from_bytes(&v1, &bytes).map(dismantle_chain);
            let migrated = migration.read(&mut DataInputView::new(&bytes));
            let written = match migrated {
                Ok(m) => {
                    let written = to_bytes(&v2, &m).map(|_| ());
                    let mut next = m.next;
                    while let Some(c) = next {
                        next = c.next;
                    }
                    Some(written)
                }
                Err(e) => {
                    assert!(matches!(e, Error::DepthLimitExceeded { .. }), "{e}");
                    None
                }
            };
            results.push((depth, read.is_ok(), written));
        }
        results
    });
    for (depth, read, written) in results {
        // chain(d) spends d + 1 levels: d = 511 is the deepest at the default limit.
        let fits = depth < DEFAULT_MAX_DEPTH;
        assert_eq!(read, fits, "v1 reads chain({depth})");
        assert_eq!(
            written.is_some(),
            fits,
            "the migration reads chain({depth})"
        );
        if let Some(w) = written {
            assert_eq!(w, Ok(()), "v2 writes the migrated chain({depth})");
        }
    }
}

/// Recursion through collections, as the fuzz suite's `Doc`.
#[derive(TypeInfo, Debug, Clone, PartialEq)]
enum Doc {
    Null,
    Num(i64),
    List(Vec<Doc>),
    Map(std::collections::BTreeMap<String, Doc>),
}

/// A `Doc` `levels` deep, alternating lists and maps.
fn doc(levels: usize) -> Doc {
    let mut d = Doc::Num(7);
    for level in 0..levels {
        d = if level % 2 == 0 {
            Doc::List(vec![d])
        } else {
            Doc::Map([("k".to_owned(), d)].into())
        };
    }
    d
}

#[test]
fn recursion_through_collections_reads_the_full_budget_on_a_2_mib_stack() {
    // A level of `Doc` (the derived serializer, `Vec` or `BTreeMap`, the recursive field)
    // took about 4 KB of stack in a debug build: 512 levels overflowed the 2 MiB thread of
    // a timely worker before the budget ended them. Each level now runs on a stack with
    // room for it, typed and type-free.
    let results = on_small_stack(2 * MB, || {
        let s = typeinfo::serializer::<Doc>().expect("serializer");
        // `doc(n)` spends n levels (one per `Vec<Doc>` or `BTreeMap<String, Doc>` field).
        let value = doc(DEFAULT_MAX_DEPTH);
        let bytes = to_bytes(&s, &value).expect("at the limit");
        let read = from_bytes(&s, &bytes).map(|back| back == value);
        let skipped = s.skip(&mut DataInputView::new(&bytes));
        let restored = SnapshotRegistry::default()
            .restore(&s.snapshot())
            .and_then(|r| from_bytes(&r, &bytes).and_then(|v| to_bytes(&r, &v)))
            .map(|b| b == bytes);
        let deeper = to_bytes(&s, &doc(DEFAULT_MAX_DEPTH + 1)).map(|_| ());
        // Hostile bytes: a megabyte of `List` tags with lengths of one.
        let hostile = from_bytes(&s, &[2u8, 1].repeat(MB / 2)).map(|_| ());
        (read, skipped, restored, deeper, hostile)
    });
    let (read, skipped, restored, deeper, hostile) = results;
    assert_eq!(read, Ok(true));
    assert_eq!(skipped, Ok(()));
    assert_eq!(restored, Ok(true));
    assert!(depth_error(&deeper), "{deeper:?}");
    assert!(depth_error(&hostile), "{hostile:?}");
}
