//! The sorter of batch execution: records sorted by (normalized key, timestamp) in bounded
//! memory, as Flink's `NormalizedKeySorter` and its external merge sort do.
//!
//! Records are serialized (key, then value) into fixed-size memory segments. Beside them an
//! index holds one fixed-size entry per record: the first 16 bytes of the key's normalized
//! key (big-endian in a `u128`, so that comparing two prefixes is one integer comparison and
//! orders as `memcmp` of the bytes), the record's timestamp, and where its bytes are. Sorting
//! moves only the index entries. Two entries compare by prefix; only when the prefixes tie and
//! both keys were longer than the prefix does the comparator read the two serialized keys
//! ([`TypeComparator::compare_serialized`]). The normalized keys of the built-in comparators
//! are prefix-free, so a tie of prefixes where one key fit whole means equal keys. Within a
//! key, records are ordered by timestamp, then by arrival (the sort is stable: a record's
//! position in the segments is the last tie-breaker).
//!
//! When the segments and the index reach the memory budget (default 128 MiB), the index is
//! sorted and the run is written to a temporary file in the spill directory; the memory is
//! reused for the next run. [`finish`](NormalizedKeySorter::finish) merges the runs and the
//! last in-memory run (a k-way merge over a heap of run heads). Spill files are created
//! unlinked ([`tempfile::tempfile_in`]): nothing is left behind on success, on an error, on
//! a cancel, or when the process is killed.
//!
//! [`SortConfig::normalized_keys`]`(false)` turns the prefixes off (every comparison reads
//! the serialized keys), which is how the benchmark measures what normalized keys buy.
//!
//! # Examples
//!
//! ```
//! use typeinfo_runtime::sort::{NormalizedKeySorter, SortConfig};
//!
//! # fn main() -> typeinfo_runtime::Result<()> {
//! let mut sorter = NormalizedKeySorter::<String, u32>::new(SortConfig::default())?;
//! sorter.add(&"bob".to_owned(), 20, &2)?;
//! sorter.add(&"ada".to_owned(), 30, &3)?;
//! sorter.add(&"bob".to_owned(), 10, &1)?;
//! let sorted: Vec<(String, i64, u32)> = sorter.finish()?.collect::<Result<_, _>>()?;
//! assert_eq!(
//!     sorted,
//!     vec![("ada".into(), 30, 3), ("bob".into(), 10, 1), ("bob".into(), 20, 2)]
//! );
//! # Ok(())
//! # }
//! ```

use std::cell::Cell;
use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use typeinfo::{KeyType, TypeInfo};
use typeinfo_serializers::{DataInputView, DataOutputView, TypeComparator, TypeSerializer};

use crate::error::{Error, Result};

/// Bytes of the normalized-key prefix kept in each index entry.
pub const PREFIX_BYTES: usize = 16;

/// The default memory budget of one sorter (Flink's default managed memory per slot is of
/// this order; batch mode gives one sorter per keyed input of a subtask). The configuration
/// owns it ([`ExecutionConfig::batch_sort_memory`](crate::ExecutionConfig) defaults to it).
pub use crate::config::DEFAULT_SORT_MEMORY as DEFAULT_MEMORY_BUDGET;

/// The default size of one memory segment (Flink's default page size).
pub const DEFAULT_SEGMENT_BYTES: usize = 32 << 10;

/// How a [`NormalizedKeySorter`] uses memory and disk.
#[derive(Debug, Clone)]
pub struct SortConfig {
    memory_budget: usize,
    segment_bytes: usize,
    spill_dir: Option<PathBuf>,
    normalized_keys: bool,
}

impl Default for SortConfig {
    fn default() -> Self {
        Self {
            memory_budget: DEFAULT_MEMORY_BUDGET,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            spill_dir: None,
            normalized_keys: true,
        }
    }
}

impl SortConfig {
    /// The bytes of segments and index held before a run is spilled (at least two
    /// segments).
    pub fn memory_budget(mut self, bytes: usize) -> Self {
        self.memory_budget = bytes;
        self
    }

    /// The size of one memory segment (64 bytes to 1 GiB; a record larger than a segment
    /// gets a segment of its own size).
    pub fn segment_bytes(mut self, bytes: usize) -> Self {
        self.segment_bytes = bytes;
        self
    }

    /// Where spilled runs go (default: the system's temporary directory).
    pub fn spill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spill_dir = Some(dir.into());
        self
    }

    /// Whether index entries carry normalized-key prefixes (default `true`); without them
    /// every comparison reads the serialized keys.
    pub fn normalized_keys(mut self, enabled: bool) -> Self {
        self.normalized_keys = enabled;
        self
    }

    fn check(&self) -> Result<()> {
        if self.segment_bytes < 64 || self.segment_bytes > 1 << 30 {
            return Err(Error::Config(format!(
                "sort segment size {} is outside 64 bytes..1 GiB",
                self.segment_bytes
            )));
        }
        if self.memory_budget < 2 * self.segment_bytes {
            return Err(Error::Config(format!(
                "sort memory budget {} is below two segments of {} bytes",
                self.memory_budget, self.segment_bytes
            )));
        }
        Ok(())
    }
}

/// One record in the index: its key's prefix, its timestamp, where its bytes are and how
/// many. 32 bytes, and all the sort moves; reading a record back takes one access to its
/// bytes, with no side table between.
#[derive(Debug, Clone, Copy)]
struct Entry {
    prefix: u128,
    timestamp: i64,
    /// The record's segment and offset, `segment << shift | offset` (see
    /// [`NormalizedKeySorter::shift`]): grows with arrival, the last tie-breaker.
    pos: u32,
    /// The record's length (the low 31 bits) and, in the top bit, whether the whole
    /// normalized key fit in the prefix.
    len_whole: u32,
}

/// [`Entry::len_whole`]'s flag.
const WHOLE: u32 = 1 << 31;

impl Entry {
    #[inline]
    fn whole(&self) -> bool {
        self.len_whole & WHOLE != 0
    }

    #[inline]
    fn len(&self) -> u32 {
        self.len_whole & !WHOLE
    }

    /// The record's segment, offset and length.
    #[inline]
    fn at(&self, shift: u32) -> (u32, u32, u32) {
        (self.pos >> shift, self.pos & ((1 << shift) - 1), self.len())
    }
}

const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();

/// A sorted run written to an unlinked temporary file.
#[derive(Debug)]
struct Run {
    file: File,
    records: u64,
}

/// Sorts `(key, timestamp, value)` records by key (the key type's comparator order), then
/// timestamp, then arrival, in bounded memory; see the [module docs](self).
pub struct NormalizedKeySorter<K: KeyType, V: TypeInfo> {
    config: SortConfig,
    key_serializer: K::Serializer,
    value_serializer: V::Serializer,
    comparator: K::Comparator,
    segments: Vec<Vec<u8>>,
    /// Segments of earlier runs, kept for reuse (cleared).
    free: Vec<Vec<u8>>,
    /// Bytes of all segments held (in use and free).
    segment_bytes_held: usize,
    index: Vec<Entry>,
    /// Bits of [`Entry::pos`] that hold the offset in a segment (the segment size rounded
    /// up to a power of two); the rest number the segment.
    shift: u32,
    runs: Vec<Run>,
    /// The longest record written (bounds what a run's reader allocates).
    longest: u32,
    records: u64,
    key_buf: Vec<u8>,
    out: DataOutputView,
}

impl<K: KeyType, V: TypeInfo> std::fmt::Debug for NormalizedKeySorter<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NormalizedKeySorter")
            .field("records", &self.records)
            .field("in_memory", &self.index.len())
            .field("spilled_runs", &self.runs.len())
            .finish_non_exhaustive()
    }
}

impl<K: KeyType, V: TypeInfo> NormalizedKeySorter<K, V> {
    /// An empty sorter.
    ///
    /// # Errors
    ///
    /// The configuration is out of range; a serializer cannot be created.
    pub fn new(config: SortConfig) -> Result<Self> {
        config.check()?;
        let serializer_config = typeinfo::SerializerConfig::default();
        let shift = config.segment_bytes.next_power_of_two().trailing_zeros();
        Ok(Self {
            key_serializer: K::create_serializer(&serializer_config)?,
            value_serializer: V::create_serializer(&serializer_config)?,
            comparator: K::comparator(),
            config,
            segments: Vec::new(),
            free: Vec::new(),
            segment_bytes_held: 0,
            index: Vec::new(),
            shift,
            runs: Vec::new(),
            longest: 0,
            records: 0,
            key_buf: Vec::with_capacity(64),
            out: DataOutputView::with_capacity(256),
        })
    }

    /// The same sorter with the key and value serializers made with `config` (a job's
    /// serializer configuration; the default otherwise). Call before adding records.
    ///
    /// # Errors
    ///
    /// A serializer cannot be created with `config` (a disabled generic type).
    pub fn with_serializer_config(mut self, config: typeinfo::SerializerConfig) -> Result<Self> {
        self.key_serializer = K::create_serializer(&config)?;
        self.value_serializer = V::create_serializer(&config)?;
        Ok(self)
    }

    /// Records added so far.
    pub fn len(&self) -> u64 {
        self.records
    }

    /// Whether no record was added.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Runs spilled to disk so far.
    pub fn spilled_runs(&self) -> usize {
        self.runs.len()
    }

    /// Bytes of memory the segments and the index hold now.
    pub fn memory_in_use(&self) -> usize {
        self.segment_bytes_held + self.index.capacity() * ENTRY_BYTES
    }

    // Long: the sorter's hot path (one call per record), kept in one body so that the
    // segment and index bookkeeping stays in registers; its steps are commented in place.
    /// Adds a record.
    ///
    /// # Errors
    ///
    /// Serialization fails; a record is larger than 4 GiB; spilling fails (I/O).
    pub fn add(&mut self, key: &K, timestamp: i64, value: &V) -> Result<()> {
        self.out.clear();
        self.key_serializer.serialize(key, &mut self.out)?;
        self.value_serializer.serialize(value, &mut self.out)?;
        let len = self.out.len();
        let len32 = u32::try_from(len)
            .ok()
            .filter(|l| l & WHOLE == 0)
            .ok_or_else(|| {
                Error::Config(format!("a record of {len} bytes is too large to sort"))
            })?;
        let (prefix, whole) = if self.config.normalized_keys {
            self.key_buf.clear();
            self.comparator.write_normalized_key(key, &mut self.key_buf);
            let pad = if self.comparator.is_descending() {
                0xff
            } else {
                0
            };
            let mut bytes = [pad; PREFIX_BYTES];
            let n = self.key_buf.len().min(PREFIX_BYTES);
            bytes[..n].copy_from_slice(&self.key_buf[..n]);
            (
                u128::from_be_bytes(bytes),
                self.key_buf.len() <= PREFIX_BYTES,
            )
        } else {
            (0, false)
        };
        // Room in the index, or spill first. The index grows by half, or by what the budget
        // has left when that is less (at least 1024 entries).
        if self.index.len() == self.index.capacity() {
            let left = self
                .config
                .memory_budget
                .saturating_sub(self.memory_in_use())
                / ENTRY_BYTES;
            let grow = (self.index.capacity() / 2).max(1024).min(left);
            if !self.index.is_empty() && grow < 1024 {
                self.spill()?;
            }
            if self.index.len() == self.index.capacity() {
                self.index.reserve_exact(grow.max(1024));
            }
        }
        // Room in the current segment (a record starts within the segment size, which a
        // large record's own segment has no room after), or a segment (a free one, a new
        // one, or a spill when the budget or the segments `pos` can number are used up).
        let limit = 1usize << self.shift;
        let fits = self
            .segments
            .last()
            .is_some_and(|s| s.capacity() - s.len() >= len && s.len() < limit);
        if !fits {
            let size = self.config.segment_bytes.max(len);
            let numbered = self.segments.len() >= 1 << (32 - self.shift);
            if (numbered
                || (self.free.is_empty()
                    && self.memory_in_use() + size > self.config.memory_budget))
                && !self.index.is_empty()
            {
                self.spill()?;
            }
            let segment = match self.free.pop() {
                Some(s) if s.capacity() >= len => s,
                other => {
                    if let Some(s) = other {
                        self.segment_bytes_held -= s.capacity();
                    }
                    self.segment_bytes_held += size;
                    Vec::with_capacity(size)
                }
            };
            self.segments.push(segment);
        }
        let segment_index = self.segments.len() - 1;
        let segment = &mut self.segments[segment_index];
        let offset = segment.len();
        segment.extend_from_slice(self.out.as_slice());
        self.index.push(Entry {
            prefix,
            timestamp,
            // Below 2^32: at most 2^(32 - shift) segments, offsets below 2^shift.
            pos: ((segment_index as u32) << self.shift) | offset as u32,
            len_whole: len32 | if whole { WHOLE } else { 0 },
        });
        self.longest = self.longest.max(len32);
        self.records += 1;
        Ok(())
    }

    /// Sorts the in-memory index.
    fn sort_index(&mut self) -> Result<()> {
        let segments = &self.segments;
        let shift = self.shift;
        let comparator = &self.comparator;
        let failed: Cell<Option<typeinfo::Error>> = Cell::new(None);
        let bytes = |e: &Entry| record_bytes(segments, e.at(shift));
        let order = |a: &Entry, b: &Entry| {
            // The prefixes decide almost every comparison: nothing else is touched then.
            let keys = match a.prefix.cmp(&b.prefix) {
                Ordering::Equal if a.whole() || b.whole() => Ordering::Equal,
                Ordering::Equal => comparator
                    .compare_serialized(
                        &mut DataInputView::new(bytes(a)),
                        &mut DataInputView::new(bytes(b)),
                    )
                    .unwrap_or_else(|e| {
                        failed.set(Some(e));
                        Ordering::Equal
                    }),
                other => return other,
            };
            keys.then(a.timestamp.cmp(&b.timestamp))
                .then(a.pos.cmp(&b.pos))
        };
        if self.config.normalized_keys {
            radix_sort(&mut self.index, 0, &order);
        } else {
            self.index.sort_unstable_by(order);
        }
        match failed.into_inner() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Sorts the in-memory run, writes it to an unlinked temporary file, frees the memory
    /// for the next run.
    fn spill(&mut self) -> Result<()> {
        self.sort_index()?;
        let dir = self
            .config
            .spill_dir
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        let file = tempfile::tempfile_in(&dir).map_err(|source| io(&dir, source))?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        for (i, e) in self.index.iter().enumerate() {
            if i % TOUCH_AHEAD == 0 {
                let end = (i + TOUCH_AHEAD).min(self.index.len());
                touch(&self.segments, &self.index[i..end], self.shift);
            }
            let bytes = record_bytes(&self.segments, e.at(self.shift));
            let mut head = [0u8; 29];
            head[..16].copy_from_slice(&e.prefix.to_be_bytes());
            head[16..24].copy_from_slice(&e.timestamp.to_le_bytes());
            head[24] = u8::from(e.whole());
            head[25..29].copy_from_slice(&e.len().to_le_bytes());
            out.write_all(&head).map_err(|source| io(&dir, source))?;
            out.write_all(bytes).map_err(|source| io(&dir, source))?;
        }
        let file = out.into_inner().map_err(|e| io(&dir, e.into_error()))?;
        self.runs.push(Run {
            file,
            records: self.index.len() as u64,
        });
        self.index.clear();
        for mut s in self.segments.drain(..) {
            s.clear();
            self.free.push(s);
        }
        Ok(())
    }

    /// Sorts what is in memory and returns every record in order: merged from the spilled
    /// runs and the last in-memory run when the budget was reached, straight from memory
    /// when not.
    ///
    /// # Errors
    ///
    /// Reading a spilled run fails; a comparison of serialized keys fails.
    pub fn finish(mut self) -> Result<SortedRecords<K, V>> {
        self.sort_index()?;
        self.free.clear();
        let mut sources = Vec::with_capacity(self.runs.len() + 1);
        let dir = self
            .config
            .spill_dir
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        for mut run in std::mem::take(&mut self.runs) {
            run.file
                .seek(SeekFrom::Start(0))
                .map_err(|source| io(&dir, source))?;
            let mut reader = RunReader {
                input: BufReader::with_capacity(1 << 16, run.file),
                records: run.records,
                left: run.records,
                longest: self.longest,
                dir: dir.clone(),
            };
            let mut head = Head::default();
            if reader.next_into(&mut head)? {
                sources.push(Source::Run(reader, head));
            }
        }
        let merging = !sources.is_empty();
        let mut memory = MemoryRun {
            shift: self.shift,
            index: std::mem::take(&mut self.index),
            next: 0,
            touched: 0,
            head: Head::default(),
        };
        if memory.advance(&self.segments) {
            sources.push(Source::Memory(memory));
        }
        let mut sorted = SortedRecords {
            heap: (0..sources.len()).collect(),
            sources,
            segments: std::mem::take(&mut self.segments),
            key_serializer: self.key_serializer.clone(),
            value_serializer: self.value_serializer.clone(),
            comparator: self.comparator.clone(),
            merging,
            failed: false,
        };
        sorted.heapify()?;
        Ok(sorted)
    }
}

/// Below this many entries a bucket is sorted by comparisons.
const RADIX_CUTOFF: usize = 64;

/// Sorts `entries` into `order` in place: an MSD radix sort on the prefix bytes from `byte`
/// on (the bytes every entry of a bucket shares are skipped in one pass), each bucket
/// permuted in place (American flag sort: no scratch buffer the size of the index, which
/// would cost as much memory again, and its page faults), each bucket of few entries (or of
/// equal prefixes) finished by [`sort_leaf`]. The permutation is not stable, and need not be:
/// the leaves order by (prefix, timestamp, arrival) in full.
fn radix_sort(entries: &mut [Entry], byte: usize, order: &impl Fn(&Entry, &Entry) -> Ordering) {
    let byte = if entries.len() <= RADIX_CUTOFF {
        PREFIX_BYTES
    } else {
        first_difference(entries).max(byte)
    };
    let split = (byte < PREFIX_BYTES)
        .then(|| buckets(entries, byte))
        .flatten();
    let Some((starts, counts)) = split else {
        sort_leaf(entries, order);
        return;
    };
    permute(entries, byte, starts, counts);
    for (start, count) in starts.into_iter().zip(counts) {
        if count > 1 {
            radix_sort(&mut entries[start..start + count], byte + 1, order);
        }
    }
}

/// Moves every entry into its bucket of `byte` (buckets at `starts`, `counts` long), in
/// place: each misplaced entry is swapped into the next free slot of its bucket until the
/// slot in hand holds one of its own bucket.
fn permute(entries: &mut [Entry], byte: usize, starts: [usize; 256], counts: [usize; 256]) {
    let mut next = starts;
    for bucket in 0..256 {
        let end = starts[bucket] + counts[bucket];
        while next[bucket] < end {
            let mut entry = entries[next[bucket]];
            let mut home = digit(&entry, byte);
            while home != bucket {
                std::mem::swap(&mut entry, &mut entries[next[home]]);
                next[home] += 1;
                home = digit(&entry, byte);
            }
            entries[next[bucket]] = entry;
            next[bucket] += 1;
        }
    }
}

/// Sorts a few entries (or entries of equal prefixes) into `order`: by (prefix, timestamp,
/// arrival), plain integer comparisons; then each run of equal prefixes whose keys were
/// longer than the prefix, the only entries whose order needs the serialized keys, again
/// by `order`. (An equal prefix where one key fit whole means equal keys: the normalized
/// keys are prefix-free.)
fn sort_leaf(entries: &mut [Entry], order: &impl Fn(&Entry, &Entry) -> Ordering) {
    entries.sort_unstable_by_key(|e| (e.prefix, e.timestamp, e.pos));
    let mut start = 0;
    while start < entries.len() {
        let prefix = entries[start].prefix;
        let run = entries[start..]
            .iter()
            .take_while(|e| e.prefix == prefix)
            .count();
        let tie = &mut entries[start..start + run];
        if run > 1 && !tie.iter().any(Entry::whole) {
            tie.sort_unstable_by(order);
        }
        start += run;
    }
}

/// The first byte at which the prefixes of `entries` differ ([`PREFIX_BYTES`] when they
/// are all equal): one pass, however many leading bytes they share.
fn first_difference(entries: &[Entry]) -> usize {
    let first = entries.first().map_or(0, |e| e.prefix);
    let differ = entries.iter().fold(0, |acc, e| acc | (e.prefix ^ first));
    (differ.leading_zeros() / 8) as usize
}

#[inline]
fn digit(e: &Entry, byte: usize) -> usize {
    (e.prefix >> (8 * (PREFIX_BYTES - 1 - byte))) as u8 as usize
}

/// The start and size of each bucket of `byte`; `None` when every entry is in one bucket.
#[allow(clippy::type_complexity)] // two tables of 256
fn buckets(entries: &[Entry], byte: usize) -> Option<([usize; 256], [usize; 256])> {
    let mut counts = [0usize; 256];
    for e in entries {
        counts[digit(e, byte)] += 1;
    }
    if counts.contains(&entries.len()) {
        return None;
    }
    let mut starts = [0usize; 256];
    let mut sum = 0;
    for (start, count) in starts.iter_mut().zip(counts) {
        *start = sum;
        sum += count;
    }
    Some((starts, counts))
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// Orders two records' keys: by prefix, then (both truncated, or no prefixes) by the
/// serialized keys at the start of the records' bytes.
#[inline]
fn compare_keys<K, C: TypeComparator<K>>(
    comparator: &C,
    (prefix_a, whole_a, bytes_a): (u128, bool, &[u8]),
    (prefix_b, whole_b, bytes_b): (u128, bool, &[u8]),
) -> typeinfo::Result<Ordering> {
    match prefix_a.cmp(&prefix_b) {
        Ordering::Equal if whole_a || whole_b => Ok(Ordering::Equal),
        Ordering::Equal => comparator.compare_serialized(
            &mut DataInputView::new(bytes_a),
            &mut DataInputView::new(bytes_b),
        ),
        other => Ok(other),
    }
}

/// The current record of a source of the merge.
#[derive(Debug, Default)]
struct Head {
    prefix: u128,
    timestamp: i64,
    whole: bool,
    /// A run's record bytes (a memory run's are in the segments).
    bytes: Vec<u8>,
    /// A memory run's record.
    at: Option<(u32, u32, u32)>,
}

#[derive(Debug)]
struct RunReader {
    input: BufReader<File>,
    /// The run's records (to read it again from its start).
    records: u64,
    left: u64,
    longest: u32,
    dir: PathBuf,
}

impl RunReader {
    /// Reads the next record into `head`; `false` at the end of the run.
    fn next_into(&mut self, head: &mut Head) -> Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        let mut fixed = [0u8; 29];
        self.input
            .read_exact(&mut fixed)
            .map_err(|source| io(&self.dir, source))?;
        let mut prefix = [0u8; 16];
        prefix.copy_from_slice(&fixed[..16]);
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&fixed[16..24]);
        let mut len = [0u8; 4];
        len.copy_from_slice(&fixed[25..29]);
        let len = u32::from_le_bytes(len);
        if len > self.longest || fixed[24] > 1 {
            return Err(Error::Corrupt(format!(
                "a spilled sort run in `{}` is corrupt (record of {len} bytes)",
                self.dir.display()
            )));
        }
        head.prefix = u128::from_be_bytes(prefix);
        head.timestamp = i64::from_le_bytes(ts);
        head.whole = fixed[24] == 1;
        head.bytes.resize(len as usize, 0);
        self.input
            .read_exact(&mut head.bytes)
            .map_err(|source| io(&self.dir, source))?;
        self.left -= 1;
        Ok(true)
    }
}

#[derive(Debug)]
struct MemoryRun {
    shift: u32,
    index: Vec<Entry>,
    /// The entry after the head.
    next: usize,
    /// The records of the entries before this one were touched ([`touch`]).
    touched: usize,
    head: Head,
}

impl MemoryRun {
    fn advance(&mut self, segments: &[Vec<u8>]) -> bool {
        if self.next == self.touched {
            let end = (self.next + TOUCH_AHEAD).min(self.index.len());
            touch(segments, &self.index[self.next..end], self.shift);
            self.touched = end;
        }
        match self.index.get(self.next).copied() {
            Some(e) => {
                self.next += 1;
                self.head.prefix = e.prefix;
                self.head.timestamp = e.timestamp;
                self.head.whole = e.whole();
                self.head.at = Some(e.at(self.shift));
                true
            }
            None => false,
        }
    }
}

#[derive(Debug)]
enum Source {
    Run(RunReader, Head),
    Memory(MemoryRun),
}

impl Source {
    fn head(&self) -> &Head {
        match self {
            Source::Run(_, h) => h,
            Source::Memory(m) => &m.head,
        }
    }
}

fn head_bytes<'a>(head: &'a Head, segments: &'a [Vec<u8>]) -> &'a [u8] {
    match head.at {
        Some(at) => record_bytes(segments, at),
        None => &head.bytes,
    }
}

/// Records [`touch`] reaches ahead of the one being read in sorted order.
const TOUCH_AHEAD: usize = 64;

/// Reads the first and the last byte of the records of `entries`, and nothing else. In
/// sorted order the records lie at random in the segments, and a record that is read and
/// then used (deserialized, processed) is one trip to memory after another; these loads do
/// not depend on each other, so the processor has many of them in flight at once, and the
/// records are in the cache when they are used. (A prefetch instruction would say the same
/// without the loads, but needs `unsafe`, which this workspace denies outside a few documented
/// blocks; see the workspace `Cargo.toml`.)
#[inline]
fn touch(segments: &[Vec<u8>], entries: &[Entry], shift: u32) {
    let mut sum = 0u8;
    for e in entries {
        let (segment, offset, len) = e.at(shift);
        if let Some(bytes) = segments.get(segment as usize) {
            let (first, last) = (offset as usize, (offset + len.max(1) - 1) as usize);
            sum ^= bytes.get(first).copied().unwrap_or(0) ^ bytes.get(last).copied().unwrap_or(0);
        }
    }
    std::hint::black_box(sum);
}

/// The bytes of the record at (segment, offset, length).
#[inline]
fn record_bytes(segments: &[Vec<u8>], (segment, offset, len): (u32, u32, u32)) -> &[u8] {
    let start = offset as usize;
    &segments[segment as usize][start..start + len as usize]
}

/// The sorted records of a [`NormalizedKeySorter`], read (and merged) lazily.
pub struct SortedRecords<K: KeyType, V: TypeInfo> {
    sources: Vec<Source>,
    /// A binary min-heap of source indices (sources in spill order, memory last: equal
    /// records come out in arrival order).
    heap: Vec<usize>,
    segments: Vec<Vec<u8>>,
    key_serializer: K::Serializer,
    value_serializer: V::Serializer,
    comparator: K::Comparator,
    merging: bool,
    failed: bool,
}

impl<K: KeyType, V: TypeInfo> std::fmt::Debug for SortedRecords<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SortedRecords")
            .field("sources", &self.heap.len())
            .field("merging", &self.merging)
            .finish_non_exhaustive()
    }
}

impl<K: KeyType, V: TypeInfo> SortedRecords<K, V> {
    /// Whether source `a`'s head comes before source `b`'s.
    fn less(&self, a: usize, b: usize) -> Result<bool> {
        let (ha, hb) = (self.sources[a].head(), self.sources[b].head());
        let order = compare_keys(
            &self.comparator,
            (ha.prefix, ha.whole, head_bytes(ha, &self.segments)),
            (hb.prefix, hb.whole, head_bytes(hb, &self.segments)),
        )?
        .then(ha.timestamp.cmp(&hb.timestamp))
        .then(a.cmp(&b));
        Ok(order == Ordering::Less)
    }

    fn sift_down(&mut self, mut at: usize) -> Result<()> {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * at + 1, 2 * at + 2);
            let mut smallest = at;
            if l < n && self.less(self.heap[l], self.heap[smallest])? {
                smallest = l;
            }
            if r < n && self.less(self.heap[r], self.heap[smallest])? {
                smallest = r;
            }
            if smallest == at {
                return Ok(());
            }
            self.heap.swap(at, smallest);
            at = smallest;
        }
    }

    fn heapify(&mut self) -> Result<()> {
        for at in (0..self.heap.len() / 2).rev() {
            self.sift_down(at)?;
        }
        Ok(())
    }

    fn decode(&self, source: usize) -> Result<(K, i64, V)> {
        let head = self.sources[source].head();
        let mut input = DataInputView::new(head_bytes(head, &self.segments));
        let key = self.key_serializer.deserialize(&mut input)?;
        let value = self.value_serializer.deserialize(&mut input)?;
        Ok((key, head.timestamp, value))
    }

    /// Starts again from the first record (batch mode reruns a failed stage from its sorted
    /// input): spilled runs are read again from their start; nothing is sorted again.
    ///
    /// # Errors
    ///
    /// Reading a spilled run fails.
    pub fn rewind(&mut self) -> Result<()> {
        self.heap.clear();
        self.failed = false;
        for (at, source) in self.sources.iter_mut().enumerate() {
            let more = match source {
                Source::Run(reader, head) => {
                    reader
                        .input
                        .seek(SeekFrom::Start(0))
                        .map_err(|source| io(&reader.dir, source))?;
                    reader.left = reader.records;
                    reader.next_into(head)?
                }
                Source::Memory(m) => {
                    m.next = 0;
                    m.touched = 0;
                    m.advance(&self.segments)
                }
            };
            if more {
                self.heap.push(at);
            }
        }
        self.heapify()
    }

    fn next_record(&mut self) -> Result<Option<(K, i64, V)>> {
        let Some(&top) = self.heap.first() else {
            return Ok(None);
        };
        let record = self.decode(top)?;
        let more = match &mut self.sources[top] {
            Source::Run(reader, head) => reader.next_into(head)?,
            Source::Memory(m) => m.advance(&self.segments),
        };
        if !more {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
        }
        if self.heap.len() > 1 {
            self.sift_down(0)?;
        }
        Ok(Some(record))
    }
}

impl<K: KeyType, V: TypeInfo> Iterator for SortedRecords<K, V> {
    type Item = Result<(K, i64, V)>;

    /// The next record in order; after an error, `None`.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_record() {
            Ok(r) => r.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
