//! Operator (non-keyed) state: list state redistributed by split or by union on restore,
//! and broadcast state with a read-only view.
//!
//! Each subtask snapshots its operator state to one file (`TIOS` format, see `FORMAT.md`).
//! On restore at any parallelism, every subtask reads every old file: a split list is
//! the concatenation of all old lists, cut into contiguous parts, part `i` for subtask `i`;
//! a union list is the whole concatenation for every subtask; a broadcast map is the same
//! on every subtask, so the first file's copy is taken.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::marker::PhantomData;
use std::path::Path;

use typeinfo::{
    DataInputView, DataOutputView, SerializerConfig, SerializerSnapshot, SnapshotRegistry,
    TypeInfo, TypeSerializer,
};

use crate::descriptor::{MapKey, StateValue};
use crate::error::{Error, Result};
use crate::savepoint::{part_transcoder, write_atomically, PartFn};

/// The most items of a zero-sized type one operator state may hold in a snapshot.
const MAX_ZERO_SIZED_ITEMS: u64 = 1 << 20;

const MAGIC: [u8; 4] = *b"TIOS";
const END_MAGIC: [u8; 4] = *b"TIOE";
const VERSION: u8 = 1;

/// How an operator list state is spread over subtasks on restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Redistribution {
    /// The elements of all old subtasks, cut into one contiguous part per new subtask.
    Split,
    /// Every new subtask gets every element.
    Union,
}

/// The kind of an operator state, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperatorStateKind {
    /// A list state redistributed by split ([`Redistribution::Split`]).
    Split = 1,
    /// A list state redistributed by union ([`Redistribution::Union`]).
    Union = 2,
    /// A broadcast state (a map, the same on every subtask).
    Broadcast = 3,
}

use OperatorStateKind as Kind;

impl OperatorStateKind {
    fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => Self::Split,
            2 => Self::Union,
            3 => Self::Broadcast,
            _ => return None,
        })
    }
}

impl std::fmt::Display for OperatorStateKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Split => "split list",
            Self::Union => "union list",
            Self::Broadcast => "broadcast",
        })
    }
}

/// One state of an operator state file, as stored.
#[derive(Debug, Clone)]
pub struct StoredOperatorState {
    /// The state's name.
    pub name: String,
    /// Its kind.
    pub kind: OperatorStateKind,
    /// The snapshots of its serializers (list: the element; broadcast: key, then value).
    pub serializers: Vec<SerializerSnapshot>,
    /// How many items it holds (list elements or broadcast entries).
    pub items: u64,
    /// The items' bytes.
    data: Vec<u8>,
}

impl StoredOperatorState {
    /// The size of its items in bytes.
    pub fn data_len(&self) -> usize {
        self.data.len()
    }

    /// Reads every item with `read`, which reads one item's parts; an item that cannot be
    /// read, or bytes after the last one, make the file corrupt.
    fn read_items(
        &self,
        path: &Path,
        mut read: impl FnMut(&mut DataInputView<'_>) -> typeinfo::Result<()>,
    ) -> Result<()> {
        let corrupt = |detail: String| Error::CorruptSavepoint {
            path: path.to_owned(),
            detail: format!("state `{}`: {detail}", self.name),
        };
        // Items take at least a byte each, but for zero-sized item types; a count
        // beyond both the bytes and a budget of zero-sized items is corrupt (a loop of
        // 2^64 items must never start).
        if self.items > (self.data.len() as u64).max(MAX_ZERO_SIZED_ITEMS) {
            return Err(corrupt(format!(
                "{} items cannot fit in {} bytes",
                self.items,
                self.data.len()
            )));
        }
        let mut data = DataInputView::new(&self.data);
        for _ in 0..self.items {
            // Each item is its own value (its own zero-sized budget).
            data.reset_zero_sized_budget();
            read(&mut data).map_err(|e| corrupt(e.to_string()))?;
        }
        if !data.is_empty() {
            return Err(corrupt(format!(
                "{} bytes after its items",
                data.remaining()
            )));
        }
        Ok(())
    }
}

/// An operator state file (`TIOS`, `.opstate`), read and checked: magics, checksum,
/// version and the states' names, kinds, serializer snapshots and item counts. Items are
/// read by [`values`](Self::values), without their Rust types.
#[derive(Debug, Clone)]
pub struct OperatorStateFile {
    path: std::path::PathBuf,
    states: Vec<StoredOperatorState>,
}

impl OperatorStateFile {
    /// Reads and checks the file at `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read; [`Error::CorruptSavepoint`] for a truncated,
    /// damaged or foreign file.
    pub fn open(path: &Path) -> Result<Self> {
        let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
        let corrupt = |detail: String| Error::CorruptSavepoint {
            path: path.to_path_buf(),
            detail,
        };
        if bytes.len() < 13 || bytes[..4] != MAGIC || bytes[bytes.len() - 4..] != END_MAGIC {
            return Err(corrupt(
                "not a typeinfo operator state file, or truncated".to_owned(),
            ));
        }
        let body = &bytes[..bytes.len() - 8];
        let crc = u32::from_le_bytes([
            bytes[body.len()],
            bytes[body.len() + 1],
            bytes[body.len() + 2],
            bytes[body.len() + 3],
        ]);
        if crc32fast::hash(body) != crc {
            return Err(corrupt("checksum mismatch: the file is corrupt".to_owned()));
        }
        let mut input = DataInputView::new(&body[4..]);
        let parse = |e: typeinfo::Error| corrupt(format!("malformed: {e}"));
        if input.read_u8().map_err(parse)? != VERSION {
            return Err(corrupt("unknown format version".to_owned()));
        }
        let count = input.read_len(3).map_err(parse)?;
        let mut states =
            Vec::with_capacity(typeinfo::capacity_for::<StoredOperatorState>(count, 3));
        for _ in 0..count {
            let name = std::str::from_utf8(input.read_len_prefixed().map_err(parse)?)
                .map_err(|_| corrupt("state name is not UTF-8".to_owned()))?
                .to_owned();
            let kind_byte = input.read_u8().map_err(parse)?;
            let kind = Kind::from_byte(kind_byte)
                .ok_or_else(|| corrupt(format!("state `{name}`: unknown kind {kind_byte}")))?;
            let n = input.read_len(4).map_err(parse)?;
            let serializers = (0..n)
                .map(|_| SerializerSnapshot::read_from(&mut input))
                .collect::<typeinfo::Result<Vec<_>>>()
                .map_err(parse)?;
            let items = input.read_varint().map_err(parse)?;
            let data = input.read_len_prefixed().map_err(parse)?.to_vec();
            states.push(StoredOperatorState {
                name,
                kind,
                serializers,
                items,
                data,
            });
        }
        if !input.is_empty() {
            return Err(corrupt(format!(
                "{} bytes after the last state",
                input.remaining()
            )));
        }
        Ok(Self {
            path: path.to_owned(),
            states,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The states, in stored order.
    pub fn states(&self) -> &[StoredOperatorState] {
        &self.states
    }

    /// The items of `state` without their Rust types: per item, its parts (a list's
    /// element; a broadcast state's key and value) read through the serializers
    /// `registry` restores from the stored snapshots.
    ///
    /// # Errors
    ///
    /// [`Error::Serialization`] for a snapshot no restorer knows; [`Error::CorruptSavepoint`]
    /// for items that cannot be read.
    pub fn values(
        &self,
        state: &StoredOperatorState,
        registry: &SnapshotRegistry,
    ) -> Result<Vec<Vec<typeinfo::Value>>> {
        let expected = if state.kind == Kind::Broadcast { 2 } else { 1 };
        if state.serializers.len() != expected {
            return Err(Error::CorruptSavepoint {
                path: self.path.clone(),
                detail: format!(
                    "state `{}`: {} serializers for a {} state",
                    state.name,
                    state.serializers.len(),
                    state.kind
                ),
            });
        }
        let serializers = state
            .serializers
            .iter()
            .map(|s| registry.restore(s))
            .collect::<typeinfo::Result<Vec<_>>>()?;
        let mut items = Vec::new();
        state.read_items(&self.path, |input| {
            let item = serializers
                .iter()
                .map(|s| s.deserialize(input))
                .collect::<typeinfo::Result<Vec<_>>>()?;
            items.push(item);
            Ok(())
        })?;
        Ok(items)
    }
}

trait OperatorState: Send {
    fn kind(&self) -> Kind;
    fn snapshots(&self) -> Vec<SerializerSnapshot>;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Today's serialized elements (list) or entries (broadcast: key then value).
    fn write(&self, out: &mut DataOutputView) -> Result<u64>;
    /// Transcoders of stored parts into today's layout.
    fn transcoders(&self, stored: &[SerializerSnapshot], name: &str) -> Result<Vec<PartFn>>;
    /// Replaces the state with entries in today's layout.
    fn load(&mut self, items: &[Vec<u8>]) -> Result<()>;
}

struct ListOp<T: TypeInfo> {
    kind: Kind,
    serializer: T::Serializer,
    items: Vec<T>,
}

impl<T: StateValue> OperatorState for ListOp<T> {
    fn kind(&self) -> Kind {
        self.kind
    }
    fn snapshots(&self) -> Vec<SerializerSnapshot> {
        vec![self.serializer.snapshot()]
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn write(&self, out: &mut DataOutputView) -> Result<u64> {
        for item in &self.items {
            // Each item is its own value to its reader (its own zero-sized budget).
            out.reset_zero_sized_budget();
            self.serializer.serialize(item, out)?;
        }
        Ok(self.items.len() as u64)
    }
    fn transcoders(&self, stored: &[SerializerSnapshot], name: &str) -> Result<Vec<PartFn>> {
        let [element] = stored else {
            return Err(shape(name, "one element serializer", stored.len()));
        };
        Ok(vec![
            part_transcoder(
                &self.serializer,
                element,
                &SnapshotRegistry::default(),
                name,
                "element",
            )?
            .0,
        ])
    }
    fn load(&mut self, items: &[Vec<u8>]) -> Result<()> {
        self.items = items
            .iter()
            .map(|b| typeinfo::from_bytes(&self.serializer, b))
            .collect::<typeinfo::Result<_>>()?;
        Ok(())
    }
}

struct BroadcastOp<K: TypeInfo, V: TypeInfo> {
    key: K::Serializer,
    value: V::Serializer,
    map: BTreeMap<K, V>,
}

impl<K: MapKey, V: StateValue> OperatorState for BroadcastOp<K, V> {
    fn kind(&self) -> Kind {
        Kind::Broadcast
    }
    fn snapshots(&self) -> Vec<SerializerSnapshot> {
        vec![self.key.snapshot(), self.value.snapshot()]
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn write(&self, out: &mut DataOutputView) -> Result<u64> {
        for (k, v) in &self.map {
            out.reset_zero_sized_budget();
            self.key.serialize(k, out)?;
            self.value.serialize(v, out)?;
        }
        Ok(self.map.len() as u64)
    }
    fn transcoders(&self, stored: &[SerializerSnapshot], name: &str) -> Result<Vec<PartFn>> {
        let [k, v] = stored else {
            return Err(shape(name, "a key and a value serializer", stored.len()));
        };
        let registry = SnapshotRegistry::default();
        Ok(vec![
            part_transcoder(&self.key, k, &registry, name, "key")?.0,
            part_transcoder(&self.value, v, &registry, name, "value")?.0,
        ])
    }
    fn load(&mut self, items: &[Vec<u8>]) -> Result<()> {
        self.map.clear();
        for bytes in items {
            let mut input = DataInputView::new(bytes);
            let k = self.key.deserialize(&mut input)?;
            let v = self.value.deserialize(&mut input)?;
            self.map.insert(k, v);
        }
        Ok(())
    }
}

fn shape(name: &str, expected: &str, found: usize) -> Error {
    Error::StateMismatch {
        state: name.to_owned(),
        detail: format!("{expected}, but {found} serializers were stored"),
    }
}

/// A registered operator list state.
#[derive(Debug)]
pub struct OperatorListState<T> {
    index: usize,
    _t: PhantomData<fn() -> T>,
}

// A handle is an index into its backend: copy it freely (an operator's clone per subtask
// registers its own).
impl<T> Clone for OperatorListState<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for OperatorListState<T> {}

/// A registered broadcast state (read and write).
#[derive(Debug)]
pub struct BroadcastState<K, V> {
    index: usize,
    _t: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for BroadcastState<K, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K, V> Copy for BroadcastState<K, V> {}

/// Read-only access to a broadcast state, for the keyed side of a broadcast join.
#[derive(Debug)]
pub struct ReadOnlyBroadcastState<'a, K, V> {
    map: &'a BTreeMap<K, V>,
}

impl<K: Ord, V> ReadOnlyBroadcastState<'_, K, V> {
    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    /// Every entry in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&K, &V)> {
        self.map.iter()
    }

    /// Whether `key` has a value.
    pub fn contains(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }
}

/// The operator state of one subtask.
///
/// # Examples
///
/// ```
/// use typeinfo_state::{OperatorStateBackend, Redistribution};
///
/// # fn main() -> typeinfo_state::Result<()> {
/// let mut ops = OperatorStateBackend::new(0, 1);
/// let offsets = ops.list_state::<u64>("offsets", Redistribution::Split)?;
/// offsets.add(&mut ops, 42)?;
/// assert_eq!(offsets.get(&mut ops)?, vec![42]);
/// # Ok(())
/// # }
/// ```
pub struct OperatorStateBackend {
    index: u32,
    parallelism: u32,
    config: SerializerConfig,
    states: Vec<(String, Box<dyn OperatorState>)>,
    by_name: HashMap<String, usize>,
}

impl std::fmt::Debug for OperatorStateBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorStateBackend")
            .field("index", &self.index)
            .field("parallelism", &self.parallelism)
            .field(
                "states",
                &self.states.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl OperatorStateBackend {
    /// The operator state of subtask `index` of `parallelism`.
    pub fn new(index: u32, parallelism: u32) -> Self {
        Self {
            index,
            parallelism: parallelism.max(1),
            config: SerializerConfig::default(),
            states: Vec::new(),
            by_name: HashMap::new(),
        }
    }

    /// The serializer configuration states are created with.
    pub fn with_serializer_config(mut self, config: SerializerConfig) -> Self {
        self.config = config;
        self
    }

    fn register(
        &mut self,
        name: &str,
        make: impl FnOnce(&SerializerConfig) -> Result<Box<dyn OperatorState>>,
        check: impl Fn(&mut dyn OperatorState) -> bool,
    ) -> Result<usize> {
        if let Some(&index) = self.by_name.get(name) {
            if !check(self.states[index].1.as_mut()) {
                return Err(Error::StateMismatch {
                    state: name.to_owned(),
                    detail: "another kind or other types".to_owned(),
                });
            }
            return Ok(index);
        }
        let state = make(&self.config)?;
        self.states.push((name.to_owned(), state));
        self.by_name.insert(name.to_owned(), self.states.len() - 1);
        Ok(self.states.len() - 1)
    }

    /// Registers (or finds) a list state.
    ///
    /// # Errors
    ///
    /// The name is taken by another kind or type.
    pub fn list_state<T: StateValue>(
        &mut self,
        name: &str,
        redistribution: Redistribution,
    ) -> Result<OperatorListState<T>> {
        let kind = match redistribution {
            Redistribution::Split => Kind::Split,
            Redistribution::Union => Kind::Union,
        };
        let index = self.register(
            name,
            |config| {
                Ok(Box::new(ListOp::<T> {
                    kind,
                    serializer: T::create_serializer(config)?,
                    items: Vec::new(),
                }))
            },
            |s| s.kind() == kind && s.as_any_mut().downcast_mut::<ListOp<T>>().is_some(),
        )?;
        Ok(OperatorListState {
            index,
            _t: PhantomData,
        })
    }

    /// Registers (or finds) a broadcast state.
    ///
    /// # Errors
    ///
    /// The name is taken by another kind or type.
    pub fn broadcast_state<K: MapKey, V: StateValue>(
        &mut self,
        name: &str,
    ) -> Result<BroadcastState<K, V>> {
        let index = self.register(
            name,
            |config| {
                Ok(Box::new(BroadcastOp::<K, V> {
                    key: K::create_serializer(config)?,
                    value: V::create_serializer(config)?,
                    map: BTreeMap::new(),
                }))
            },
            |s| s.as_any_mut().downcast_mut::<BroadcastOp<K, V>>().is_some(),
        )?;
        Ok(BroadcastState {
            index,
            _t: PhantomData,
        })
    }

    fn typed<S: 'static>(&mut self, index: usize) -> Result<&mut S> {
        let (name, state) = &mut self.states[index];
        let name = name.clone();
        state
            .as_any_mut()
            .downcast_mut::<S>()
            .ok_or(Error::StateMismatch {
                state: name,
                detail: "other types".to_owned(),
            })
    }

    /// Writes this subtask's operator state to `path` (temporary name, sync, rename).
    ///
    /// # Errors
    ///
    /// An I/O or serialization error; a previous file at `path` is intact.
    pub fn snapshot(&self, path: &Path) -> Result<()> {
        let mut out = DataOutputView::new();
        out.write_bytes(&MAGIC);
        out.write_u8(VERSION);
        out.write_len(self.states.len());
        let mut items = DataOutputView::new();
        for (name, state) in &self.states {
            out.write_len_prefixed(name.as_bytes());
            out.write_u8(state.kind() as u8);
            let snapshots = state.snapshots();
            out.write_len(snapshots.len());
            for s in &snapshots {
                s.write_to(&mut out)?;
            }
            items.clear();
            let count = state.write(&mut items)?;
            out.write_varint(count);
            out.write_len_prefixed(items.as_slice());
        }
        let crc = crc32fast::hash(out.as_slice());
        out.write_u32(crc);
        out.write_bytes(&END_MAGIC);
        write_atomically(path, out.as_slice())
    }

    /// Restores from the files of every old subtask, redistributing to this subtask.
    /// Every stored state must be registered; nothing changes unless every file is sound
    /// and every state compatible.
    ///
    /// # Errors
    ///
    /// A corrupt or foreign file, an unregistered or incompatible state.
    pub fn restore(&mut self, files: &[&Path]) -> Result<()> {
        // name -> items in today's layout, in file order
        let mut gathered: BTreeMap<usize, Vec<Vec<u8>>> = BTreeMap::new();
        let mut broadcast_seen: HashMap<usize, bool> = HashMap::new();
        for path in files {
            let file = OperatorStateFile::open(path)?;
            for stored in file.states() {
                let name = &stored.name;
                let index = *self.by_name.get(name).ok_or_else(|| Error::StateMismatch {
                    state: name.clone(),
                    detail: "nothing: it is in the savepoint but not registered".to_owned(),
                })?;
                let state = self.states[index].1.as_ref();
                if state.kind() != stored.kind {
                    return Err(Error::StateMismatch {
                        state: name.clone(),
                        detail: format!("kind {:?} but another kind was stored", state.kind()),
                    });
                }
                let transcoders = state.transcoders(&stored.serializers, name)?;
                if state.kind() == Kind::Broadcast && broadcast_seen.insert(index, true).is_some() {
                    continue;
                }
                let list = gathered.entry(index).or_default();
                stored.read_items(path, |data| {
                    let mut item = DataOutputView::new();
                    for t in &transcoders {
                        t(data, &mut item)?;
                    }
                    list.push(item.into_inner());
                    Ok(())
                })?;
            }
        }
        for (index, items) in gathered {
            let state = &mut self.states[index].1;
            let mine: &[Vec<u8>] = match state.kind() {
                Kind::Split => {
                    let (n, p, i) = (items.len(), self.parallelism as usize, self.index as usize);
                    &items[i * n / p..(i + 1) * n / p]
                }
                _ => &items,
            };
            state.load(mine)?;
        }
        Ok(())
    }
}

impl<T: StateValue> OperatorListState<T> {
    /// Appends an element.
    ///
    /// # Errors
    ///
    /// The handle belongs to another backend.
    pub fn add(&self, backend: &mut OperatorStateBackend, value: T) -> Result<()> {
        backend.typed::<ListOp<T>>(self.index)?.items.push(value);
        Ok(())
    }

    /// The elements (copies).
    ///
    /// # Errors
    ///
    /// The handle belongs to another backend.
    pub fn get(&self, backend: &mut OperatorStateBackend) -> Result<Vec<T>> {
        let list = backend.typed::<ListOp<T>>(self.index)?;
        Ok(list.items.iter().map(|v| list.serializer.copy(v)).collect())
    }

    /// Replaces the elements.
    ///
    /// # Errors
    ///
    /// The handle belongs to another backend.
    pub fn update(&self, backend: &mut OperatorStateBackend, values: Vec<T>) -> Result<()> {
        backend.typed::<ListOp<T>>(self.index)?.items = values;
        Ok(())
    }
}

impl<K: MapKey, V: StateValue> BroadcastState<K, V> {
    /// Sets the value of `key`.
    ///
    /// # Errors
    ///
    /// The handle belongs to another backend.
    pub fn put(&self, backend: &mut OperatorStateBackend, key: K, value: V) -> Result<()> {
        backend
            .typed::<BroadcastOp<K, V>>(self.index)?
            .map
            .insert(key, value);
        Ok(())
    }

    /// Sets the value of every key of `entries`, in their order (a later entry of an equal
    /// key wins), as Flink's `putAll`.
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo_state::OperatorStateBackend;
    ///
    /// # fn main() -> typeinfo_state::Result<()> {
    /// let mut ops = OperatorStateBackend::new(0, 1);
    /// let rules = ops.broadcast_state::<String, i32>("rules")?;
    /// rules.put_all(&mut ops, [("limit".to_owned(), 100), ("burst".to_owned(), 7)])?;
    /// assert_eq!(rules.read_only(&mut ops)?.get(&"burst".to_owned()), Some(&7));
    /// rules.clear(&mut ops)?;
    /// assert_eq!(rules.read_only(&mut ops)?.entries().count(), 0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The handle belongs to another backend.
    pub fn put_all(
        &self,
        backend: &mut OperatorStateBackend,
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<()> {
        backend
            .typed::<BroadcastOp<K, V>>(self.index)?
            .map
            .extend(entries);
        Ok(())
    }

    /// Removes every entry.
    ///
    /// # Errors
    ///
    /// The handle belongs to another backend.
    pub fn clear(&self, backend: &mut OperatorStateBackend) -> Result<()> {
        backend.typed::<BroadcastOp<K, V>>(self.index)?.map.clear();
        Ok(())
    }

    /// Removes `key`.
    ///
    /// # Errors
    ///
    /// The handle belongs to another backend.
    pub fn remove(&self, backend: &mut OperatorStateBackend, key: &K) -> Result<()> {
        backend
            .typed::<BroadcastOp<K, V>>(self.index)?
            .map
            .remove(key);
        Ok(())
    }

    /// A read-only view.
    ///
    /// # Errors
    ///
    /// The handle belongs to another backend.
    pub fn read_only<'a>(
        &self,
        backend: &'a mut OperatorStateBackend,
    ) -> Result<ReadOnlyBroadcastState<'a, K, V>> {
        Ok(ReadOnlyBroadcastState {
            map: &backend.typed::<BroadcastOp<K, V>>(self.index)?.map,
        })
    }
}
