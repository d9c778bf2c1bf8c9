//! Reading crafted bytes allocates at most a small multiple of the input: a length prefix
//! reserves at most a bounded number of bytes up front (collections grow as elements are
//! actually read), and elements that take no bytes are counted against a budget that
//! nested collections share.
//!
//! A counting global allocator measures the peak of live bytes during each read. Tests in
//! this file run one at a time (a lock), so that they do not count each other.
#![allow(unsafe_code)] // a counting global allocator (GlobalAlloc is an unsafe trait)
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use typeinfo_serializers::*;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

// SAFETY: every call is forwarded to the system allocator with the same arguments; the
// counters are only statistics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded as is; `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Count the moment both blocks may be live.
        let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: forwarded as is; the caller upholds `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak of bytes allocated (beyond those live before) while `f` runs.
fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let r = f();
    (r, PEAK.load(Ordering::Relaxed) - before)
}

fn varint(v: u64) -> Vec<u8> {
    let mut out = DataOutputView::new();
    out.write_varint(v);
    out.into_inner()
}

const MIB: usize = 1 << 20;
/// What a read may allocate beyond twice its input: the up-front reservation of a few
/// collections.
const SLACK: usize = 256 << 10;

type Big = Option<[u64; 64]>;

fn big_list() -> VecSerializer<OptionSerializer<ArraySerializer<U64Serializer, 64>>> {
    VecSerializer::new(OptionSerializer::new(ArraySerializer::new(U64Serializer)))
}

/// A megabyte announcing one element per byte: a few `None`s, then a bad tag.
fn crafted_big_list() -> Vec<u8> {
    let mut bytes = varint(MIB as u64);
    bytes.extend_from_slice(&[0; 16]);
    bytes.push(7);
    bytes.resize(MIB + 4, 0);
    bytes
}

#[test]
fn a_length_prefix_reserves_a_bounded_amount_up_front() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = crafted_big_list();
    let (r, peak) = peak_during(|| from_bytes::<Vec<Big>, _>(&big_list(), &bytes).map(|v| v.len()));
    assert!(matches!(r, Err(Error::InvalidTag { tag: 7, .. })), "{r:?}");
    assert!(
        peak <= 2 * bytes.len() + SLACK,
        "reading {} bytes allocated {peak}",
        bytes.len()
    );

    // The type-free reader of the same layout.
    let restored = SnapshotRegistry::default()
        .restore(&TypeSerializer::<Vec<Big>>::snapshot(&big_list()))
        .expect("restore");
    let (r, peak) = peak_during(|| from_bytes(&restored, &bytes).map(|_| ()));
    assert!(matches!(r, Err(Error::InvalidTag { tag: 7, .. })), "{r:?}");
    assert!(
        peak <= 2 * bytes.len() + SLACK,
        "restored: reading {} bytes allocated {peak}",
        bytes.len()
    );

    // A `VecDeque` and the migration of a list (which reads into today's element type).
    let deque = VecDequeSerializer::new(OptionSerializer::new(ArraySerializer::<_, 64>::new(
        U64Serializer,
    )));
    let (r, peak) = peak_during(|| {
        from_bytes(&deque, &bytes).map(|v: std::collections::VecDeque<Big>| v.len())
    });
    assert!(r.is_err());
    assert!(
        peak <= 2 * bytes.len() + SLACK,
        "deque: reading {} bytes allocated {peak}",
        bytes.len()
    );
}

#[test]
fn migrating_a_list_reserves_a_bounded_amount_up_front() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // `Vec<(Big, u16)>` became `Vec<(Big, u32)>`: elements are read with a migration reader.
    let old = VecSerializer::new(TupleSerializer((
        OptionSerializer::new(ArraySerializer::<_, 64>::new(U64Serializer)),
        U16Serializer,
    )));
    let new = VecSerializer::new(TupleSerializer((
        OptionSerializer::new(ArraySerializer::<_, 64>::new(U64Serializer)),
        U32Serializer,
    )));
    let Compatibility::AfterMigration(reader) = TypeSerializer::<Vec<(Big, u32)>>::resolve(
        &new,
        &TypeSerializer::<Vec<(Big, u16)>>::snapshot(&old),
        &SnapshotRegistry::default(),
    ) else {
        panic!("expected a migration");
    };
    let mut bytes = varint((MIB / 3) as u64);
    bytes.extend_from_slice(&[0, 1, 0]);
    bytes.push(9);
    bytes.resize(MIB + 4, 0);
    let (r, peak) = peak_during(|| {
        reader
            .read(&mut DataInputView::new(&bytes))
            .map(|v| v.len())
    });
    assert!(r.is_err());
    assert!(
        peak <= 2 * bytes.len() + SLACK,
        "reading {} bytes allocated {peak}",
        bytes.len()
    );
}

#[test]
fn zero_sized_elements_share_one_budget_per_read() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 2^18 units per read: `Vec<()>` of 2^18 reads (a format example pins it), three of
    // them in one read do not.
    let nested = VecSerializer::new(VecSerializer::new(UnitSerializer));
    let mut bytes = varint(3);
    for _ in 0..3 {
        bytes.extend(varint(MAX_ZERO_SIZED_ITEMS as u64));
    }
    let r = from_bytes(&nested, &bytes).map(|v: Vec<Vec<()>>| v.len());
    assert!(matches!(r, Err(Error::LengthTooLarge { .. })), "{r:?}");
    let mut bytes = varint(2);
    bytes.extend(varint(MAX_ZERO_SIZED_ITEMS as u64 / 2));
    bytes.extend(varint(MAX_ZERO_SIZED_ITEMS as u64 / 2));
    assert_eq!(
        from_bytes(&nested, &bytes).map(|v: Vec<Vec<()>>| v.len()),
        Ok(2)
    );

    // The type-free reader builds a `Value` per element (48 bytes: one unit, as `()`): it
    // reads exactly what the typed reader reads, in bounded memory.
    let restored = SnapshotRegistry::default()
        .restore(&TypeSerializer::<Vec<()>>::snapshot(&VecSerializer::new(
            UnitSerializer,
        )))
        .expect("restore");
    let typed = VecSerializer::new(UnitSerializer);
    for (len, reads) in [
        (1000, true),
        (MAX_ZERO_SIZED_ITEMS, true),
        (MAX_ZERO_SIZED_ITEMS + 1, false),
        (1 << 24, false),
    ] {
        let bytes = varint(len as u64);
        let (r, peak) = peak_during(|| from_bytes(&restored, &bytes).map(|_| ()));
        assert_eq!(r.is_ok(), reads, "type-free, {len}: {r:?}");
        assert!(
            peak <= MAX_ZERO_SIZED_ITEMS * std::mem::size_of::<Value>() + SLACK,
            "4 bytes allocated {peak}"
        );
        let r: Result<Vec<()>> = from_bytes(&typed, &bytes);
        assert_eq!(r.is_ok(), reads, "typed, {len}");
    }
    // A view can be given a smaller budget.
    let bytes = varint(1000);
    let mut input = DataInputView::new(&bytes).with_zero_sized_budget(10);
    assert!(matches!(
        VecSerializer::new(UnitSerializer).deserialize(&mut input),
        Err(Error::LengthTooLarge { .. })
    ));
}

#[test]
fn nested_arrays_of_zero_sized_elements_spend_one_budget() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Typed: `[[(); 600]; 600]` is 600 + 360 000 units from zero bytes: refused (it spent
    // nothing before, and the type-free reader checked each array alone).
    let big = ArraySerializer::<_, 600>::new(ArraySerializer::<_, 600>::new(UnitSerializer));
    let r: Result<[[(); 600]; 600]> = from_bytes(&big, &[]);
    assert!(matches!(r, Err(Error::LengthTooLarge { .. })), "{r:?}");
    assert!(matches!(
        TypeSerializer::<[[(); 600]; 600]>::skip(&big, &mut DataInputView::new(&[])),
        Err(Error::LengthTooLarge { .. })
    ));
    let small = ArraySerializer::<_, 8>::new(ArraySerializer::<_, 8>::new(UnitSerializer));
    let r: Result<[[(); 8]; 8]> = from_bytes(&small, &[]);
    assert!(r.is_ok());

    // Type-free: ten `[(); 83]` nested in each other (83^10 elements, a snapshot of 131
    // bytes) restores, and reading any value is an error, quickly and in little memory.
    let mut snapshot = SerializerSnapshot::new(kinds::UNIT, 1);
    for _ in 0..10 {
        let mut payload = DataOutputView::new();
        payload.write_varint(83);
        snapshot = SerializerSnapshot::new(kinds::ARRAY, 1)
            .with_payload(payload.into_inner())
            .with_nested(vec![snapshot]);
    }
    let restored = SnapshotRegistry::default()
        .restore(&snapshot)
        .expect("restore");
    let start = std::time::Instant::now();
    let (r, peak) = peak_during(|| from_bytes(&restored, &[]).map(|_| ()));
    assert!(matches!(r, Err(Error::LengthTooLarge { .. })), "{r:?}");
    assert!(
        restored.skip(&mut DataInputView::new(&[])).is_err(),
        "skip spends the budget too"
    );
    // At most the budget's worth of `Value`s is built before the error.
    assert!(
        peak <= 2 * MAX_ZERO_SIZED_ITEMS * std::mem::size_of::<Value>() + SLACK,
        "allocated {peak}"
    );
    assert!(
        start.elapsed() < std::time::Duration::from_secs(10),
        "the budget bounds the work"
    );
    // Two levels of 83 read as the typed `[[(); 83]; 83]` reads.
    let mut two = SerializerSnapshot::new(kinds::UNIT, 1);
    for _ in 0..2 {
        let mut payload = DataOutputView::new();
        payload.write_varint(83);
        two = SerializerSnapshot::new(kinds::ARRAY, 1)
            .with_payload(payload.into_inner())
            .with_nested(vec![two]);
    }
    let restored = SnapshotRegistry::default().restore(&two).expect("restore");
    assert!(from_bytes(&restored, &[]).is_ok());
    let typed = ArraySerializer::<_, 83>::new(ArraySerializer::<_, 83>::new(UnitSerializer));
    let r: Result<[[(); 83]; 83]> = from_bytes(&typed, &[]);
    assert!(r.is_ok());
}

#[test]
fn snapshots_and_names_reserve_a_bounded_amount_up_front() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A snapshot announcing a nested snapshot per 4 bytes, then garbage.
    let mut out = DataOutputView::new();
    out.write_bytes(&SNAPSHOT_MAGIC);
    out.write_u8(SNAPSHOT_FORMAT_VERSION);
    out.write_len_prefixed(b"tuple");
    out.write_varint(1);
    out.write_len_prefixed(&[]);
    out.write_len(MIB / 4);
    out.write_bytes(&[0; MIB]);
    let bytes = out.into_inner();
    let (r, peak) = peak_during(|| SerializerSnapshot::from_bytes(&bytes));
    assert!(r.is_err());
    assert!(
        peak <= 2 * bytes.len() + SLACK,
        "reading {} bytes allocated {peak}",
        bytes.len()
    );
    // Names: a count of one name per byte, then garbage.
    let mut names = varint(MIB as u64);
    names.resize(MIB + 4, 0xff);
    let (r, peak) = peak_during(|| payload::read_names(&mut DataInputView::new(&names)));
    assert!(r.is_err());
    assert!(
        peak <= 2 * names.len() + SLACK,
        "reading {} bytes allocated {peak}",
        names.len()
    );
}

#[test]
fn writers_refuse_what_the_zero_sized_budget_would_refuse_to_read() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let to_bytes = |s: &dyn Fn(&mut DataOutputView) -> Result<()>| {
        let mut out = DataOutputView::new();
        s(&mut out).map(|()| out.into_inner())
    };
    // A list: exactly the budget writes and reads back; one more is refused on both sides.
    let list = VecSerializer::new(UnitSerializer);
    let fits = vec![(); MAX_ZERO_SIZED_ITEMS];
    let bytes = to_bytes(&|out| list.serialize(&fits, out)).expect("the budget fits");
    assert_eq!(
        from_bytes(&list, &bytes).map(|v: Vec<()>| v.len()),
        Ok(MAX_ZERO_SIZED_ITEMS)
    );
    let over = vec![(); MAX_ZERO_SIZED_ITEMS + 1];
    let r = to_bytes(&|out| list.serialize(&over, out));
    assert!(
        matches!(r, Err(Error::TooManyZeroSizedElements { count, budget })
            if count == MAX_ZERO_SIZED_ITEMS as u64 + 1 && budget == MAX_ZERO_SIZED_ITEMS),
        "{r:?}"
    );
    // Nested collections share the value's budget when written, as when read.
    let nested = VecSerializer::new(VecSerializer::new(UnitSerializer));
    let three = vec![vec![(); MAX_ZERO_SIZED_ITEMS / 2]; 3];
    assert!(to_bytes(&|out| nested.serialize(&three, out)).is_err());
    let two = vec![vec![(); MAX_ZERO_SIZED_ITEMS / 2]; 2];
    let bytes = to_bytes(&|out| nested.serialize(&two, out)).expect("two halves fit");
    assert!(from_bytes(&nested, &bytes).is_ok());
    // Arrays, sets and maps too.
    let arrays = ArraySerializer::<_, 600>::new(ArraySerializer::<_, 600>::new(UnitSerializer));
    assert!(to_bytes(&|out| arrays.serialize(&[[(); 600]; 600], out)).is_err());
    let sets = VecSerializer::new(BTreeSetSerializer::new(UnitSerializer));
    let many_sets = vec![std::collections::BTreeSet::from([()]); MAX_ZERO_SIZED_ITEMS + 1];
    assert!(to_bytes(&|out| sets.serialize(&many_sets, out)).is_err());
    // Elements of a list whose min length is not zero spend nothing.
    let options = VecSerializer::new(OptionSerializer::new(UnitSerializer));
    assert!(to_bytes(&|out| options.serialize(&vec![None; MAX_ZERO_SIZED_ITEMS + 1], out)).is_ok());

    // The type-free writer spends what the type-free reader spends.
    let restored = SnapshotRegistry::default()
        .restore(&TypeSerializer::<Vec<()>>::snapshot(&list))
        .expect("restore");
    let values = |n| Value::List(vec![Value::Unit; n]);
    let bytes = to_bytes(&|out| restored.serialize(&values(MAX_ZERO_SIZED_ITEMS), out)).unwrap();
    assert!(from_bytes(&restored, &bytes).is_ok());
    assert!(matches!(
        to_bytes(&|out| restored.serialize(&values(MAX_ZERO_SIZED_ITEMS + 1), out)),
        Err(Error::TooManyZeroSizedElements { .. })
    ));

    // The budget is a value's: `clear` and `reset_zero_sized_budget` restore it, so that a
    // view reused for many values (or holding many values each read on its own) does not
    // refuse the second.
    let mut out = DataOutputView::new();
    list.serialize(&fits, &mut out).unwrap();
    assert!(
        list.serialize(&vec![()], &mut out).is_err(),
        "one value's budget is spent"
    );
    out.clear();
    list.serialize(&fits, &mut out).unwrap();
    out.reset_zero_sized_budget();
    list.serialize(&fits, &mut out).unwrap();
    let mut input = DataInputView::new(out.as_slice());
    for _ in 0..2 {
        input.reset_zero_sized_budget();
        let v: Vec<()> = list.deserialize(&mut input).unwrap();
        assert_eq!(v.len(), MAX_ZERO_SIZED_ITEMS);
    }
    // A smaller budget on the writer matches a smaller one on the reader.
    let mut small = DataOutputView::new().with_zero_sized_budget(10);
    assert!(list.serialize(&vec![(); 11], &mut small).is_err());
    small.clear();
    assert!(list.serialize(&vec![(); 10], &mut small).is_ok());
}
