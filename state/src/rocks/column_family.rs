//! A state's column family: registering a state creates it with its options, list state's
//! merge operator ([`concat_merge`]) and TTL's compaction filter.

use std::sync::Arc;

use rocksdb::compaction_filter::Decision;
use rocksdb::MergeOperands;
use typeinfo::DataInputView;

use super::backend::RocksDbKeyedStateBackend;
use super::error::rocks;
use super::registered_state::{Rocks, RocksState};
use crate::backend::{StateId, StateKind};
use crate::codec::ErasedCodec;
use crate::descriptor::StateKey;
use crate::error::{Error, Result};
use crate::ttl::StateTtlConfig;

/// Concatenates list elements: the merge operator of list state (elements are
/// self-delimiting, so appending is concatenation).
pub(crate) fn concat_merge(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &MergeOperands,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(
        existing.map_or(0, <[u8]>::len) + operands.iter().map(<[u8]>::len).sum::<usize>(),
    );
    if let Some(e) = existing {
        out.extend_from_slice(e);
    }
    for op in operands {
        out.extend_from_slice(op);
    }
    Some(out)
}

impl<K: StateKey> RocksDbKeyedStateBackend<K> {
    pub(super) fn register<C: ErasedCodec + 'static>(
        &mut self,
        name: &str,
        kind: StateKind,
        ttl: Option<StateTtlConfig>,
        make: impl FnOnce() -> Result<C>,
    ) -> Result<StateId>
    where
        Rocks<C>: RocksState<K>,
    {
        if let Some(&index) = self.by_name.get(name) {
            let existing = &self.states[index];
            if existing.codec().meta().kind != kind
                || existing.as_any().downcast_ref::<Rocks<C>>().is_none()
            {
                return Err(Error::StateMismatch {
                    state: name.to_owned(),
                    detail: format!(
                        "kind {kind} or types other than its first registration ({})",
                        existing.codec().meta().kind
                    ),
                });
            }
            return Ok(StateId(index as u32));
        }
        let codec = make()?;
        let cf = format!("s{}", self.states.len());
        let mut cf_opts = self.rocks_options.column_family(&self.memory);
        if kind == StateKind::List {
            cf_opts.set_merge_operator_associative("typeinfo_list_append", concat_merge);
        } else {
            // Values are read, changed and written back per record (aggregates, counters):
            // overwrite them in the memtable where the new value fits, instead of adding a
            // version per write, which keeps the memtable's skiplist small and its searches
            // short. Safe because one thread owns the backend and snapshots are taken
            // synchronously, with no writes in between.
            cf_opts.set_inplace_update_support(true);
        }
        if let Some(t) = ttl
            .clone()
            .filter(|t| t.cleans_up_in_compaction() && kind != StateKind::List)
        {
            let clock = Arc::clone(&self.options.clock);
            let map = kind == StateKind::Map;
            let skip_user_key = codec.user_key_skipper();
            cf_opts.set_compaction_filter(
                "typeinfo_ttl",
                move |_level: u32, _key: &[u8], value: &[u8]| {
                    ttl_decision(&t, clock.now_ms(), value, map, skip_user_key.as_deref())
                },
            );
        }
        self.db.create_cf(&cf, &cf_opts).map_err(rocks)?;
        self.cf_options.push(cf_opts);
        self.states.push(Box::new(Rocks {
            cf: Arc::from(cf.as_str()),
            codec,
            ttl,
        }));
        self.by_name.insert(name.to_owned(), self.states.len() - 1);
        Ok(StateId((self.states.len() - 1) as u32))
    }
}

/// The compaction filter of TTL: drops values (map entries) whose timestamp expired.
#[allow(clippy::type_complexity)] // an optional skipper of a user key
fn ttl_decision(
    ttl: &StateTtlConfig,
    now: i64,
    value: &[u8],
    map: bool,
    skip_user_key: Option<&(dyn Fn(&mut DataInputView<'_>) -> typeinfo::Result<()> + Send + Sync)>,
) -> Decision {
    let mut input = DataInputView::new(value);
    if map {
        match skip_user_key {
            Some(skip) if skip(&mut input).is_ok() => {}
            _ => return Decision::Keep,
        }
    }
    match input.read_i64() {
        Ok(ts) if ttl.is_expired(ts, now) => Decision::Remove,
        _ => Decision::Keep,
    }
}
