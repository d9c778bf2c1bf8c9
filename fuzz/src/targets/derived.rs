//! Derived types: directly recursive (through `Box`, `Option<Box>`, `Vec`, `BTreeMap`),
//! indirectly recursive (`#[typeinfo(recursive)]`), enums with data, a generic struct,
//! attributes (`skip`, `default`, `alias`, `with`) and nested collections; each with the
//! restored reader of its snapshot (recursive snapshots included).

use std::collections::BTreeMap;

use typeinfo::TypeInfo;

use crate::harness::Sub;
use crate::mutate::Nest;
use crate::targets::typed::{sub, sub_with};
use crate::values::{Arb, Gen};

/// How deep generated recursive values go.
const DEPTH: usize = 6;

#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub enum Tree {
    Leaf(i64),
    Node(Box<Tree>, Box<Tree>),
}

fn tree(g: &mut Gen, depth: usize) -> Tree {
    if depth == 0 || g.rng.usize(..3) == 0 {
        Tree::Leaf(i64::arb(g))
    } else {
        Tree::Node(Box::new(tree(g, depth - 1)), Box::new(tree(g, depth - 1)))
    }
}

impl Arb for Tree {
    fn arb(g: &mut Gen) -> Self {
        tree(g, DEPTH)
    }
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub struct Chain {
    pub value: i32,
    pub next: Option<Box<Chain>>,
}

impl Arb for Chain {
    fn arb(g: &mut Gen) -> Self {
        let n = g.rng.usize(..20);
        let mut chain = Chain {
            value: i32::arb(g),
            next: None,
        };
        for _ in 0..n {
            chain = Chain {
                value: i32::arb(g),
                next: Some(Box::new(chain)),
            };
        }
        chain
    }
}

/// A JSON-like document: recursion through `Vec` and `BTreeMap`.
#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub enum Doc {
    Null,
    Num(i64),
    Str(String),
    List(Vec<Doc>),
    Map(BTreeMap<String, Doc>),
}

fn doc(g: &mut Gen, depth: usize) -> Doc {
    match g.rng.usize(..if depth == 0 { 3 } else { 5 }) {
        0 => Doc::Null,
        1 => Doc::Num(i64::arb(g)),
        2 => Doc::Str(String::arb(g)),
        3 => Doc::List((0..g.rng.usize(..4)).map(|_| doc(g, depth - 1)).collect()),
        _ => Doc::Map(
            (0..g.rng.usize(..4))
                .map(|_| (String::arb(g), doc(g, depth - 1)))
                .collect(),
        ),
    }
}

impl Arb for Doc {
    fn arb(g: &mut Gen) -> Self {
        doc(g, 4)
    }
}

/// Indirect recursion: `Folder -> Vec<Entry> -> Box<Folder>`.
#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub struct Folder {
    pub name: String,
    #[typeinfo(recursive)]
    pub entries: Vec<Entry>,
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub enum Entry {
    File(String, u64),
    Folder(Box<Folder>),
}

fn folder(g: &mut Gen, depth: usize) -> Folder {
    let n = if depth == 0 { 0 } else { g.rng.usize(..4) };
    let entries = (0..n)
        .map(|_| {
            if g.rng.bool() {
                Entry::File(String::arb(g), u64::arb(g))
            } else {
                Entry::Folder(Box::new(folder(g, depth - 1)))
            }
        })
        .collect();
    Folder {
        name: String::arb(g),
        entries,
    }
}

impl Arb for Folder {
    fn arb(g: &mut Gen) -> Self {
        folder(g, 4)
    }
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub struct Named {
    pub id: u64,
    pub name: String,
    pub tags: Vec<String>,
    pub parent: Option<i32>,
}

impl Arb for Named {
    fn arb(g: &mut Gen) -> Self {
        Named {
            id: u64::arb(g),
            name: String::arb(g),
            tags: Vec::arb(g),
            parent: Option::arb(g),
        }
    }
}

/// Unit, struct, tuple and newtype variants.
#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub enum Event {
    Tick,
    Join { id: u32, name: String },
    Move(i64, i64),
    Nested(Named),
    Amount(f64),
    Many(Vec<Option<Named>>),
}

impl Arb for Event {
    fn arb(g: &mut Gen) -> Self {
        match g.rng.usize(..6) {
            0 => Event::Tick,
            1 => Event::Join {
                id: u32::arb(g),
                name: String::arb(g),
            },
            2 => Event::Move(i64::arb(g), i64::arb(g)),
            3 => Event::Nested(Named::arb(g)),
            4 => Event::Amount(f64::arb(g)),
            _ => Event::Many(Vec::arb(g)),
        }
    }
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub struct Pair<A, B> {
    pub left: A,
    pub right: Vec<B>,
}

impl<A: Arb, B: Arb> Arb for Pair<A, B> {
    fn arb(g: &mut Gen) -> Self {
        Pair {
            left: A::arb(g),
            right: Vec::arb(g),
        }
    }
}

/// Every field attribute that changes bytes.
#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub struct Attributes {
    pub kept: String,
    #[typeinfo(skip)]
    pub cache: Vec<u8>,
    #[typeinfo(default)]
    pub limit: u32,
    #[typeinfo(alias = "old_name")]
    pub renamed: i16,
    #[typeinfo(with = "typeinfo::VarU64Serializer")]
    pub counter: u64,
    #[typeinfo(with = "typeinfo::VarI32Serializer")]
    pub delta: i32,
}

impl Arb for Attributes {
    fn arb(g: &mut Gen) -> Self {
        Attributes {
            kept: String::arb(g),
            cache: Vec::new(),
            limit: u32::arb(g),
            renamed: i16::arb(g),
            counter: u64::arb(g),
            delta: i32::arb(g),
        }
    }
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub struct Unit;

impl Arb for Unit {
    fn arb(_: &mut Gen) -> Self {
        Unit
    }
}

#[derive(TypeInfo, Debug, Clone, PartialEq)]
pub struct Newtype(pub Vec<Option<String>>);

impl Arb for Newtype {
    fn arb(g: &mut Gen) -> Self {
        Newtype(Vec::arb(g))
    }
}

fn serializer<T: TypeInfo>() -> Result<T::Serializer, String> {
    typeinfo::serializer::<T>().map_err(|e| e.to_string())
}

/// Builds the sub-targets.
pub fn build(g: &mut Gen) -> Result<Vec<Sub>, String> {
    let leaf = |tag: u8| -> Vec<u8> {
        let mut v = vec![tag];
        v.extend_from_slice(&7i64.to_le_bytes());
        v
    };
    let tree_nests = vec![
        // Node(Node(...(Leaf, Leaf)..., Leaf), Leaf): deep on the left, valid when closed.
        Nest {
            open: vec![1],
            leaf: leaf(0),
            close: leaf(0),
        },
        // Left open: the input ends while the reader is deep.
        Nest {
            open: vec![1],
            leaf: vec![],
            close: vec![],
        },
    ];
    let chain_nests = vec![Nest {
        open: vec![1, 0, 0, 0, 1],
        leaf: vec![2, 0, 0, 0, 0],
        close: vec![],
    }];
    let doc_nests = vec![
        // List([List([...Null...])]).
        Nest {
            open: vec![3, 1],
            leaf: vec![0],
            close: vec![],
        },
        // Map({"": Map({"": ...})}).
        Nest {
            open: vec![4, 1, 0],
            leaf: vec![0],
            close: vec![],
        },
    ];
    // Folder { name: "", entries: [Folder(Folder { name: "", entries: [...] })] }.
    let folder_nests = vec![Nest {
        open: vec![0, 1, 1],
        leaf: vec![0, 0],
        close: vec![],
    }];
    Ok(vec![
        sub_with::<Tree, _>("Tree", serializer::<Tree>()?, g, tree_nests)?,
        sub_with::<Chain, _>("Chain", serializer::<Chain>()?, g, chain_nests)?,
        sub_with::<Doc, _>("Doc", serializer::<Doc>()?, g, doc_nests)?,
        sub_with::<Folder, _>("Folder", serializer::<Folder>()?, g, folder_nests)?,
        sub::<Named>(g)?,
        sub::<Event>(g)?,
        sub::<Pair<String, Option<u16>>>(g)?,
        sub::<Pair<Event, Vec<Named>>>(g)?,
        sub::<Attributes>(g)?,
        sub::<Unit>(g)?,
        sub::<Newtype>(g)?,
        sub::<Vec<Option<Vec<String>>>>(g)?,
        sub::<Vec<Option<[u64; 64]>>>(g)?,
        sub::<Vec<()>>(g)?,
        sub::<Vec<Unit>>(g)?,
        sub::<Vec<Vec<Unit>>>(g)?,
        sub::<BTreeMap<String, Vec<Event>>>(g)?,
        sub::<Option<Box<Tree>>>(g)?,
    ])
}
