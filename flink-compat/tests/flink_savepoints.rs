//! Savepoints written by Flink 2.3 (`tests/flink/FlinkSavepoints.java`, `run_savepoints.sh`)
//! read back: the metadata, the operator ids of the uids, and every state of the sampled
//! keys equal to what the Java program printed (`tests/savepoints/NAME.expected`).

use std::collections::BTreeMap;
use std::path::PathBuf;

mod common;

use typeinfo::Result;
use typeinfo_flink_compat::savepoint::{
    DistributionMode, FlinkSavepoint, FlinkValue, OperatorDump, OperatorId, StreamHandle,
};

const NAMES: [&str; 4] = ["hashmap", "rocksdb", "hashmap_snappy", "rocksdb_snappy"];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/savepoints")
}

/// The lines of NAME.expected.
fn expected(name: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(dir().join(format!("{name}.expected")))
        .unwrap_or_else(|e| panic!("{name}.expected: {e}"));
    text.lines()
        .map(|l| l.split('|').map(str::to_owned).collect())
        .collect()
}

fn operator<'a>(dumps: &'a [OperatorDump], uid: &str) -> &'a OperatorDump {
    dumps
        .iter()
        .find(|d| d.uid == uid)
        .unwrap_or_else(|| panic!("no operator `{uid}`"))
}

/// What a keyed state holds for a key and namespace, as the Java program prints it: the
/// value; a map's entries sorted by user key; a timer's timestamp.
fn keyed_value(dump: &OperatorDump, state: &str, key: &str, namespace: &str) -> Option<String> {
    let state = dump.keyed_state(state)?;
    let mut map = BTreeMap::new();
    let mut value = None;
    for entry in &state.entries {
        if entry.key != FlinkValue::String(key.to_owned())
            || entry.namespace.to_string() != namespace
        {
            continue;
        }
        match &entry.user_key {
            Some(user_key) => {
                map.insert(user_key.to_string(), entry.value.to_string());
            }
            None => value = Some(entry.value.to_string()),
        }
    }
    if state.kind == "MAP" {
        let entries: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        return Some(format!("{{{}}}", entries.join(", ")));
    }
    value
}

fn operator_value(dump: &OperatorDump, state: &str) -> String {
    let mut items: Vec<String> = Vec::new();
    let mut entries: BTreeMap<String, String> = BTreeMap::new();
    for s in dump.operator.iter().filter(|s| s.name == state) {
        match &s.value {
            FlinkValue::List(list) => items.extend(list.iter().map(ToString::to_string)),
            FlinkValue::Map(map) => {
                entries.extend(map.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            }
            other => items.push(other.to_string()),
        }
    }
    if entries.is_empty() {
        items.sort();
        format!("[{}]", items.join(", "))
    } else {
        let e: Vec<String> = entries.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        format!("{{{}}}", e.join(", "))
    }
}

#[test]
fn dumps_equal_what_flink_printed() -> Result<()> {
    for name in NAMES {
        let savepoint = FlinkSavepoint::open(dir().join(name))?;
        let dumps = savepoint.dump()?;
        let mut checked = 0;
        for line in expected(name) {
            let [owner, state, key, namespace, value] = &line[..] else {
                assert_eq!(line[0], "operator", "{name}: {line:?}");
                let op = operator(&dumps, &line[1]);
                assert_eq!(op.id.to_string(), line[2], "{name}: {line:?}");
                assert_eq!(OperatorId::from_uid(&line[1]), op.id);
                continue;
            };
            let dump = operator(&dumps, owner);
            let got = if key == "-" {
                operator_value(dump, state)
            } else {
                keyed_value(dump, state, key, namespace)
                    .unwrap_or_else(|| panic!("{name}: no {state} for {key} in {namespace}"))
            };
            assert_eq!(&got, value, "{name}: {owner} {state} {key} {namespace}");
            checked += 1;
        }
        assert!(checked >= 38, "{name}: {checked} lines checked");
    }
    Ok(())
}

#[test]
fn metadata_describes_the_job() -> Result<()> {
    for name in NAMES {
        let savepoint = FlinkSavepoint::open(dir().join(name))?;
        let metadata = savepoint.metadata();
        assert_eq!(metadata.version, 6, "{name}");
        assert_eq!(metadata.format_type(), Some("CANONICAL"), "{name}");
        assert_eq!(metadata.operators.len(), 5, "{name}");
        let stateful = metadata
            .operator_by_uid("stateful")
            .unwrap_or_else(|| panic!("{name}: no stateful"));
        assert_eq!((stateful.parallelism, stateful.max_parallelism), (2, 128));
        let ranges: Vec<(i32, usize)> = stateful
            .subtasks
            .iter()
            .filter_map(|s| s.managed_keyed.as_ref())
            .map(|h| (h.start_key_group, h.offsets.len()))
            .collect();
        assert_eq!(ranges, [(0, 64), (64, 64)], "{name}");
        for subtask in &stateful.subtasks {
            let keyed = subtask.managed_keyed.as_ref().map(|h| &h.stream);
            assert!(
                matches!(keyed, Some(StreamHandle::Relative { .. })),
                "{name}"
            );
            let broadcast = subtask.managed_operator.as_ref().map(|h| &h.states[0]);
            assert!(
                matches!(broadcast, Some(s) if s.name == "rules" && s.mode == DistributionMode::Broadcast),
                "{name}"
            );
        }
        let source = metadata.operator_by_uid("source");
        let modes: Vec<DistributionMode> = source
            .iter()
            .flat_map(|op| &op.subtasks)
            .filter_map(|s| s.managed_operator.as_ref())
            .flat_map(|h| h.states.iter().map(|s| s.mode))
            .collect();
        assert!(modes.contains(&DistributionMode::SplitDistribute), "{name}");
        assert!(modes.contains(&DistributionMode::Union), "{name}");
    }
    Ok(())
}

#[test]
fn every_key_is_in_its_key_group() -> Result<()> {
    // Flink's key group of a String key: murmur hash of Java's hashCode, mod 128; the
    // subtask's key group range holds it (checked by the reader against the key's prefix).
    let savepoint = FlinkSavepoint::open(dir().join("rocksdb"))?;
    let dumps = savepoint.dump()?;
    let stateful = operator(&dumps, "stateful");
    let order = stateful.keyed_state("order").map(|s| s.entries.len());
    assert_eq!(order, Some(50));
    let timers = stateful
        .keyed_state("_timer_state/event_user-timers")
        .map(|s| s.kind.clone());
    assert_eq!(timers.as_deref(), Some("PRIORITY_QUEUE"));
    Ok(())
}

#[test]
fn both_backends_write_the_same_state() -> Result<()> {
    // Flink's canonical format is one format: the hashmap and the RocksDB backend's
    // savepoints of the same job hold the same entries (in another order within a key
    // group), compressed or not.
    let reference = common::sorted_lines(&FlinkSavepoint::open(dir().join("hashmap"))?)?;
    assert!(reference.len() > 500, "{} lines", reference.len());
    for name in &NAMES[1..] {
        let lines = common::sorted_lines(&FlinkSavepoint::open(dir().join(name))?)?;
        assert_eq!(lines, reference, "{name}");
    }
    Ok(())
}

/// `FlinkSavepoints.Order` as a Rust POJO.
#[derive(typeinfo::TypeInfo, Debug, Clone, PartialEq)]
#[typeinfo(flink_pojo = "FlinkSavepoints$Order")]
struct Order {
    user: Option<String>,
    count: i64,
    total: f64,
}

#[test]
fn typed_readers_match_the_dump() -> Result<()> {
    use typeinfo_flink_compat::{
        FlinkType, IntSerializer, LongSerializer, StringSerializer, TupleSerializer,
    };
    for name in NAMES {
        let savepoint = FlinkSavepoint::open(dir().join(name))?;
        let orders = savepoint
            .keyed_state("stateful", "order")?
            .values::<String, Order, _, _>(&StringSerializer, &Order::flink_serializer())?;
        assert_eq!(orders.len(), 50, "{name}");
        let k0 = orders.iter().find(|e| e.key == "k0").map(|e| &e.value);
        let expected = Order {
            user: Some("k0".to_owned()),
            count: 12,
            total: 1650.0,
        };
        assert_eq!(k0, Some(&expected), "{name}");
        let thirds = savepoint
            .keyed_state("stateful", "thirds")?
            .lists::<String, i64, _, _>(&StringSerializer, &LongSerializer)?;
        let k1 = thirds
            .iter()
            .find(|e| e.key == "k1")
            .map(|e| e.value.clone());
        assert_eq!(k1, Some(vec![51, 201, 351, 501]), "{name}");
        let buckets = savepoint
            .keyed_state("stateful", "buckets")?
            .maps::<String, String, i32, _, _, _>(
                &StringSerializer,
                &StringSerializer,
                &IntSerializer,
            )?;
        let mut k0: Vec<(String, Option<i32>)> = buckets
            .into_iter()
            .filter(|e| e.key == "k0")
            .map(|e| e.value)
            .collect();
        k0.sort();
        assert_eq!(k0.len(), 7, "{name}");
        assert_eq!(k0[5], ("m5".to_owned(), Some(1)), "{name}");
        let mean = savepoint
            .keyed_state("stateful", "mean")?
            .values::<String, (i64, i32), _, _>(
                &StringSerializer,
                &TupleSerializer((LongSerializer, IntSerializer)),
            )?;
        let k7 = mean.iter().find(|e| e.key == "k7").map(|e| e.value);
        assert_eq!(k7, Some((3384, 12)), "{name}");
        // A layout that is not the Rust type's is refused, naming the state.
        let err = savepoint
            .keyed_state("stateful", "sum")?
            .values::<String, i32, _, _>(&StringSerializer, &IntSerializer)
            .expect_err("Long read as Int");
        assert!(err.to_string().contains("state `sum`"), "{err}");
    }
    Ok(())
}
