//! The errors of the RocksDB backend: RocksDB's own, a missing column family, a state id or
//! types the backend did not register.

use crate::backend::StateId;
use crate::error::Error;

pub(crate) fn rocks(e: rocksdb::Error) -> Error {
    Error::RocksDb(e)
}

pub(super) fn missing_cf(name: &str) -> Error {
    Error::Storage(format!("column family `{name}` is missing"))
}

pub(super) fn unknown(id: StateId) -> Error {
    Error::StateMismatch {
        state: format!("#{}", id.0),
        detail: "an id this backend never gave out".to_owned(),
    }
}

pub(super) fn wrong_types(name: &str) -> Error {
    Error::StateMismatch {
        state: name.to_owned(),
        detail: "types other than its registration".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

    use rocksdb::{Options, DB};

    use super::*;

    /// A RocksDB error keeps RocksDB's error as its source (for callers that log chains).
    #[test]
    fn rocksdb_errors_keep_their_source() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options::default(); // create_if_missing is off: the open fails
        let error = rocks(DB::open(&opts, dir.path().join("absent")).err().unwrap());
        let source = std::error::Error::source(&error).expect("a source");
        assert!(
            source.downcast_ref::<rocksdb::Error>().is_some(),
            "{source:?}"
        );
        assert!(error.to_string().starts_with("rocksdb: "), "{error}");
    }
}
