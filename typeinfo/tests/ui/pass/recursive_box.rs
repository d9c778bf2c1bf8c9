// Recursive types: direct recursion through `Box`/`Option`/`Vec` is detected, indirect
// recursion is marked `recursive`.
use typeinfo::{from_bytes, to_bytes, TypeInfo};

#[derive(TypeInfo, Debug, PartialEq)]
enum Expr {
    Num(i64),
    Add(Box<Expr>, Box<Expr>),
    Neg { inner: Box<Expr> },
}

#[derive(TypeInfo, Debug, PartialEq)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

#[derive(TypeInfo, Debug, PartialEq)]
struct Folder {
    name: String,
    #[typeinfo(recursive)]
    files: Vec<Entry>,
}

#[derive(TypeInfo, Debug, PartialEq)]
enum Entry {
    File(String),
    Folder(Box<Folder>),
}

fn main() -> typeinfo::Result<()> {
    let s = typeinfo::serializer::<Expr>()?;
    let e = Expr::Add(Box::new(Expr::Num(1)), Box::new(Expr::Neg { inner: Box::new(Expr::Num(2)) }));
    assert_eq!(from_bytes(&s, &to_bytes(&s, &e)?)?, e);

    let s = typeinfo::serializer::<Tree>()?;
    let t = Tree { label: "root".to_owned(), children: vec![Tree { label: "leaf".to_owned(), children: vec![] }] };
    assert_eq!(from_bytes(&s, &to_bytes(&s, &t)?)?, t);

    let s = typeinfo::serializer::<Folder>()?;
    let f = Folder {
        name: "/".to_owned(),
        files: vec![Entry::File("a".to_owned()), Entry::Folder(Box::new(Folder { name: "b".to_owned(), files: vec![] }))],
    };
    assert_eq!(from_bytes(&s, &to_bytes(&s, &f)?)?, f);
    Ok(())
}
