//! The fuzz targets: one family of decoders each, run in its own process.

use std::path::Path;

use crate::harness::Target;

pub mod builtin;
pub mod derived;
pub mod evolution;
pub mod flink;
pub mod runtime;
pub mod savepoint;
pub mod snapshot;
pub mod typed;

/// Every target, in the order `run --target all` runs them.
pub static TARGETS: &[Target] = &[
    Target {
        name: "builtin",
        about: "every built-in serializer (primitives, strings, sequences, arrays, options, tuples, pointers, maps, sets, time, decimals, varints, serde) and its restored reader",
        rss_bound_mib: 1024,
        build: builtin::build,
    },
    Target {
        name: "derived",
        about: "derived types: recursive (Box, Option<Box>, Vec, BTreeMap, indirect), enums with data, generics, attributes, nested collections; restored readers of recursive snapshots",
        rss_bound_mib: 1024,
        build: derived::build,
    },
    Target {
        name: "evolution",
        about: "bytes of version 1 read by the migration reader of version 2 (fields widened, renamed, added, removed; variants reordered; recursive)",
        rss_bound_mib: 1024,
        build: evolution::build,
    },
    Target {
        name: "snapshot",
        about: "serializer snapshot envelopes: read, write back, restore a type-free reader, resolve today's serializer and migrate values",
        rss_bound_mib: 1024,
        build: snapshot::build,
    },
    Target {
        name: "savepoint",
        about: "savepoint files restored into the heap and RocksDB backends, as they are, migrated and rescaled",
        rss_bound_mib: 1024,
        build: savepoint::build,
    },
    Target {
        name: "runtime",
        about: "batches from another process, checkpoint operator parts, _metadata and what a restore reads after it",
        rss_bound_mib: 1024,
        build: runtime::build,
    },
    Target {
        name: "flink",
        about: "Apache Flink 2.3's byte layouts (typeinfo-flink-compat): values and serializer snapshots as Flink writes them, from its own golden files, read, resolved and migrated",
        rss_bound_mib: 1024,
        build: flink::build,
    },
];

/// The target named `name`.
pub fn find(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// A scratch directory in memory where there is one (`/dev/shm`), removed when dropped.
pub fn scratch_dir() -> Result<tempfile::TempDir, String> {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() { shm } else { Path::new("/tmp") };
    tempfile::Builder::new()
        .prefix("typeinfo-fuzz-")
        .tempdir_in(base)
        .or_else(|_| tempfile::tempdir())
        .map_err(|e| e.to_string())
}
