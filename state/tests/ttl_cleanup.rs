//! TTL cleanup beyond reads and snapshots: RocksDB's compaction filter and the heap's
//! incremental cleanup remove expired values that nobody reads.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::sync::Arc;
use std::time::Duration;

use typeinfo_state::*;

fn options(clock: &ManualClock) -> Result<BackendOptions> {
    Ok(BackendOptions::new(128, KeyGroupRange::all(128))?.clock(Arc::new(clock.clone())))
}

#[test]
fn rocksdb_compaction_drops_expired_values_and_map_entries() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::InvalidConfig(e.to_string()))?;
    let clock = ManualClock::new(0);
    let mut b = RocksDbKeyedStateBackend::<String>::open(
        dir.path(),
        options(&clock)?,
        RocksDbOptions::default(),
    )?;
    let ttl = StateTtlConfig::new(Duration::from_secs(10)).return_expired_if_not_cleaned_up();
    let value = b.value_state::<(), u32>(&ValueStateDescriptor::new("v").with_ttl(ttl.clone()))?;
    let map = b.map_state::<(), u32, u32>(&MapStateDescriptor::new("m").with_ttl(ttl))?;
    for i in 0..20 {
        b.set_current_key(&format!("k{i}"))?;
        value.update(&mut b, &(), i)?;
        map.put(&mut b, &(), i, i)?;
    }
    clock.advance(Duration::from_secs(5));
    b.set_current_key(&"k0".to_owned())?;
    value.update(&mut b, &(), 100)?;
    map.put(&mut b, &(), 0, 100)?;
    clock.advance(Duration::from_secs(6));
    // Expired values are still visible (not cleaned up) until compaction.
    b.set_current_key(&"k5".to_owned())?;
    assert_eq!(value.value(&mut b, &())?, Some(5));
    b.compact()?;
    assert_eq!(b.keys(value.id(), &())?, vec!["k0".to_owned()]);
    assert_eq!(b.keys(map.id(), &())?, vec!["k0".to_owned()]);
    b.set_current_key(&"k5".to_owned())?;
    assert_eq!(value.value(&mut b, &())?, None);
    Ok(())
}

#[test]
fn heap_incremental_cleanup_removes_expired_values_on_access() -> Result<()> {
    let clock = ManualClock::new(0);
    let mut b = HeapKeyedStateBackend::<String>::new(options(&clock)?)?;
    // Expired values stay visible until cleaned up, so only the sweep removes them.
    let ttl = StateTtlConfig::new(Duration::from_secs(10))
        .return_expired_if_not_cleaned_up()
        .cleanup_incrementally(1000);
    let value = b.value_state::<(), u32>(&ValueStateDescriptor::new("v").with_ttl(ttl))?;
    for i in 0..200 {
        b.set_current_key(&format!("k{i}"))?;
        value.update(&mut b, &(), i)?;
    }
    clock.advance(Duration::from_secs(11));
    b.set_current_key(&"k0".to_owned())?;
    let group = b.current_key_group()?;
    let _ = value.value(&mut b, &())?;
    let left = b.keys(value.id(), &())?;
    assert!(left.len() < 200, "the access swept its key group");
    for key in &left {
        b.set_current_key(key)?;
        assert_ne!(
            b.current_key_group()?,
            group,
            "`{key}` of the swept key group survived"
        );
    }
    Ok(())
}
