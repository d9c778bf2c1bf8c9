//! Generic recursive types compile as written (no `bound = "T: TypeInfo + Sync"`) and
//! round-trip, with a type parameter that is `Send` but not `Sync`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::cell::Cell;

use typeinfo::testing::Conformance;
use typeinfo::{from_bytes, to_bytes, TypeInfo};

#[derive(TypeInfo, Debug, Clone, PartialEq)]
struct L<T> {
    v: T,
    next: Option<Box<L<T>>>,
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
struct Node<T> {
    v: T,
    kids: Vec<Node<T>>,
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
enum Expr<N> {
    Num(N),
    Add(Box<Expr<N>>, Box<Expr<N>>),
}

/// `Send` but not `Sync`.
#[derive(Debug, Clone, PartialEq)]
struct Counter(Cell<u32>);

typeinfo_for_counter!();

/// A hand-written `TypeInfo` for a type that is not `Sync`, through `u32`'s serializer.
macro_rules! typeinfo_for_counter {
    () => {
        #[derive(Debug, Clone)]
        struct CounterSerializer(<u32 as TypeInfo>::Serializer);

        impl typeinfo::TypeSerializer<Counter> for CounterSerializer {
            fn serialize(
                &self,
                value: &Counter,
                out: &mut typeinfo::DataOutputView,
            ) -> typeinfo::Result<()> {
                self.0.serialize(&value.0.get(), out)
            }
            fn deserialize(
                &self,
                input: &mut typeinfo::DataInputView<'_>,
            ) -> typeinfo::Result<Counter> {
                Ok(Counter(Cell::new(self.0.deserialize(input)?)))
            }
            fn copy(&self, value: &Counter) -> Counter {
                value.clone()
            }
            fn skip(&self, input: &mut typeinfo::DataInputView<'_>) -> typeinfo::Result<()> {
                typeinfo::TypeSerializer::<u32>::skip(&self.0, input)
            }
            fn fixed_length(&self) -> Option<usize> {
                typeinfo::TypeSerializer::<u32>::fixed_length(&self.0)
            }
            fn snapshot(&self) -> typeinfo::SerializerSnapshot {
                typeinfo::TypeSerializer::<u32>::snapshot(&self.0)
            }
            fn resolve(
                &self,
                _old: &typeinfo::SerializerSnapshot,
                _registry: &typeinfo::SnapshotRegistry,
            ) -> typeinfo::Compatibility<Counter> {
                typeinfo::Compatibility::AsIs
            }
        }

        impl TypeInfo for Counter {
            type Serializer = CounterSerializer;
            fn create_serializer(
                config: &typeinfo::SerializerConfig,
            ) -> typeinfo::Result<CounterSerializer> {
                Ok(CounterSerializer(u32::create_serializer(config)?))
            }
            fn description() -> typeinfo::TypeDescription {
                u32::description()
            }
        }
    };
}
use typeinfo_for_counter;

fn list<T: Clone>(values: &[T]) -> L<T> {
    let mut next = None;
    for v in values.iter().rev() {
        next = Some(Box::new(L { v: v.clone(), next }));
    }
    *next.expect("at least one value")
}

#[test]
fn a_generic_linked_list_round_trips() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<L<String>>()?;
    let l = list(&["a".to_owned(), "b".to_owned(), String::new()]);
    assert_eq!(from_bytes(&s, &to_bytes(&s, &l)?)?, l);
    let s = typeinfo::serializer::<L<u64>>()?;
    let l = list(&[1u64, 2, 3]);
    assert_eq!(from_bytes(&s, &to_bytes(&s, &l)?)?, l);
    Ok(())
}

#[test]
fn a_generic_tree_round_trips() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Node<i32>>()?;
    let t = Node {
        v: 1,
        kids: vec![
            Node { v: 2, kids: vec![] },
            Node {
                v: 3,
                kids: vec![Node { v: 4, kids: vec![] }],
            },
        ],
    };
    assert_eq!(from_bytes(&s, &to_bytes(&s, &t)?)?, t);
    let e = typeinfo::serializer::<Expr<i64>>()?;
    let x = Expr::Add(
        Box::new(Expr::Num(1)),
        Box::new(Expr::Add(Box::new(Expr::Num(2)), Box::new(Expr::Num(-3)))),
    );
    assert_eq!(from_bytes(&e, &to_bytes(&e, &x)?)?, x);
    Ok(())
}

#[test]
fn a_type_parameter_need_not_be_sync() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<L<Counter>>()?;
    let l = list(&[Counter(Cell::new(7)), Counter(Cell::new(8))]);
    assert_eq!(from_bytes(&s, &to_bytes(&s, &l)?)?, l);
    let s = typeinfo::serializer::<Node<Counter>>()?;
    let t = Node {
        v: Counter(Cell::new(1)),
        kids: vec![Node {
            v: Counter(Cell::new(2)),
            kids: vec![],
        }],
    };
    assert_eq!(from_bytes(&s, &to_bytes(&s, &t)?)?, t);
    Ok(())
}

#[test]
fn generic_recursive_types_conform() -> Result<(), typeinfo::testing::ConformanceError> {
    let s = typeinfo::serializer::<L<String>>().expect("serializer");
    Conformance::new(
        s,
        vec![
            list(&["x".to_owned()]),
            list(&["y".to_owned(), "z".to_owned()]),
        ],
    )
    .run()?;
    let s = typeinfo::serializer::<Node<u8>>().expect("serializer");
    Conformance::new(
        s,
        vec![
            Node { v: 0, kids: vec![] },
            Node {
                v: 1,
                kids: vec![Node { v: 2, kids: vec![] }],
            },
        ],
    )
    .run()
}
