//! Savepoints of the RocksDB backend: a full snapshot read from one RocksDB snapshot, key
//! group by key group, and restoring savepoints in write batches ([`RocksRestore`]).

use std::marker::PhantomData;
use std::path::Path;

use rocksdb::{ReadOptions, WriteBatch};
use typeinfo::{SerializerSnapshot, SnapshotRegistry, TypeSerializer};

use super::backend::RocksDbKeyedStateBackend;
use super::error::{missing_cf, rocks};
use super::iter::prefix_end;
use super::registered_state::PhantomSkip;
use crate::backend::{KeyedStateBackend, StateMeta};
use crate::composite_key::CompositeKeyBuilder;
use crate::descriptor::StateKey;
use crate::error::{not_registered, Result};
use crate::savepoint::{
    part_transcoder, restore_into, EntryTranscoder, KeyedSnapshot, PartFn, RestoreReport,
    RestoreTarget, SnapshotHeader, SnapshotWriter,
};

/// Entries per write batch when restoring.
const RESTORE_BATCH: usize = 4096;

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
    /// `KeyedStateBackend::snapshot` of this backend.
    pub(super) fn write_snapshot(&mut self, path: &Path) -> Result<KeyedSnapshot> {
        self.flush_write_cache()?;
        let header = SnapshotHeader {
            max_parallelism: self.options.max_parallelism,
            range: self.options.range,
            key: self.key_serializer.snapshot(),
            states: self.states(),
        };
        let now = self.options.clock.now_ms();
        let prefix_len = self.builder.prefix_len();
        let key_skip = PhantomSkip(self.key_serializer.clone(), PhantomData::<fn() -> K>);
        let snapshot = self.db.snapshot();
        let mut writer = SnapshotWriter::new(&header)?;
        let mut prefix = CompositeKeyBuilder::new(self.options.max_parallelism);
        for key_group in self.options.range.iter() {
            writer.begin_key_group(key_group);
            prefix.set_key_bytes(key_group, &[]);
            let start = prefix.key_prefix().to_vec();
            for (index, state) in self.states.iter().enumerate() {
                let cf = self
                    .db
                    .cf_handle(state.cf())
                    .ok_or_else(|| missing_cf(state.cf()))?;
                let mut read = ReadOptions::default();
                read.set_snapshot(&snapshot);
                if let Some(end) = prefix_end(&start) {
                    read.set_iterate_upper_bound(end);
                }
                let mut it = self.db.raw_iterator_cf_opt(cf, read);
                it.seek(&start);
                writer.state_entries(index, |out| {
                    let mut count = 0;
                    while let (Some(k), Some(v)) = (it.key(), it.value()) {
                        if !k.starts_with(&start) {
                            break;
                        }
                        count += state.write_entry(prefix_len, &key_skip, k, v, out, now)?;
                        it.next();
                    }
                    it.status().map_err(rocks)?;
                    Ok(count)
                })?;
            }
        }
        let names: Vec<String> = header.states.iter().map(|s| s.name.clone()).collect();
        writer.finish(path, &names)
    }

    /// `KeyedStateBackend::restore` of this backend.
    pub(super) fn restore_snapshots(&mut self, files: &[&Path]) -> Result<RestoreReport> {
        self.flush_write_cache()?;
        let (max, range) = (self.options.max_parallelism, self.options.range);
        let mut target = RocksRestore {
            backend: self,
            batch: WriteBatch::default(),
            pending: 0,
        };
        restore_into(&mut target, files, max, range)
    }
}

struct RocksRestore<'a, K: StateKey> {
    backend: &'a mut RocksDbKeyedStateBackend<K>,
    batch: WriteBatch,
    pending: usize,
}

impl<K: StateKey> RestoreTarget for RocksRestore<'_, K> {
    fn key_transcoder(
        &self,
        stored: &SerializerSnapshot,
        registry: &SnapshotRegistry,
    ) -> Result<(PartFn, bool)> {
        part_transcoder(
            &self.backend.key_serializer,
            stored,
            registry,
            "(key)",
            "key",
        )
    }

    fn state_transcoder(
        &self,
        stored: &StateMeta,
        registry: &SnapshotRegistry,
    ) -> Result<(usize, EntryTranscoder)> {
        let index = *self
            .backend
            .by_name
            .get(&stored.name)
            .ok_or_else(|| not_registered(&stored.name))?;
        Ok((
            index,
            self.backend.states[index]
                .codec()
                .transcoder(stored, registry)?,
        ))
    }

    fn ingest(&mut self, state: usize, key_group: u16, key: &[u8], entry: &[u8]) -> Result<()> {
        let b = &mut *self.backend;
        b.states[state].ingest(
            &mut b.builder,
            key_group,
            key,
            entry,
            &mut self.batch,
            &b.db,
        )?;
        self.pending += 1;
        if self.pending >= RESTORE_BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let batch = std::mem::take(&mut self.batch);
        self.pending = 0;
        self.backend
            .db
            .write_opt(batch, &self.backend.write)
            .map_err(rocks)
    }

    fn clear_all(&mut self) -> Result<()> {
        self.batch = WriteBatch::default();
        self.pending = 0;
        self.backend.clear_all_states()
    }
}
