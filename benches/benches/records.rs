//! typeinfo's derived (and one hand-written) serializers beside bincode 2 (serde,
//! `config::standard()`), postcard and wincode, one record per iteration, on five record
//! shapes.
//!
//! Run (from the repository root):
//!
//! ```text
//! export CARGO_TARGET_DIR=$HOME/.cache/typeinfo-target
//! cargo bench -p typeinfo-benches --bench records
//! python3 benches/report_records.py
//! ```
//!
//! Cases (each one record type, 8 deterministic records cycled through, one record per
//! iteration):
//!
//! - `order`: `Order { user_id: String, amount: f64 }`.
//! - `money_event`: the example's `MoneyEvent` (`typeinfo/examples/money_event.rs`,
//!   included as a module) with its hand-written `MoneyEventSerializer`; the peers use a
//!   mirror struct with the same fields, [`MoneyEventPeer`]. The mirror also derives
//!   `TypeInfo`: the function `typeinfo_derive` measures the derived serializer of the same
//!   fields, for comparison with the hand-written one.
//! - `weblog`: four `u8` (IPv4 octets), four `String`s, a `u16` status, a `u64` size.
//! - `triangle`: four `[f32; 3]` (three vertices and a normal).
//! - `game_update`: nested `Vec`s, `Option`s, a unit enum and a data-carrying enum.
//!
//! Groups are `<case>/serialize`, `<case>/deserialize` and (for `money_event`)
//! `money_event/roundtrip`. Functions:
//!
//! - `typeinfo`: `typeinfo::serializer::<T>()` (for `money_event`: `MoneyEventSerializer`)
//!   into a reused `DataOutputView`; read back with `deserialize`.
//! - `bincode`: `bincode::serde::encode_into_std_write` into a reused `Vec<u8>`;
//!   `decode_from_slice`.
//! - `postcard`: `postcard::to_slice` into a reused buffer; `from_bytes`.
//! - `wincode`: `wincode::serialize_into` a reused `Vec<u8>`; `wincode::deserialize`.
//! - serialize only, the other writer of each competitor: `bincode_slice`
//!   (`encode_into_slice`), `postcard_extend` (`to_extend` into a reused `Vec`) and
//!   `wincode_slice` (`serialize_into` a reused `&mut [u8]`).
//!
//! Fairness: every serializer writes into an output buffer allocated once outside the
//! timing loop (cleared, then written); every deserializer builds the owned record from
//! the bytes its own serializer wrote, and the record is dropped inside the timing loop for
//! all alike. All libraries cycle through the same 8 records in the same order. Before any
//! timing, every library's bytes of every record are read back and compared with the
//! record, and the byte counts are written to `<criterion dir>/records_sizes.json` (read by
//! `report_records.py`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use rust_decimal::Decimal;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use typeinfo::{DataInputView, DataOutputView, TypeInfo, TypeSerializer};
use wincode::config::DefaultConfig;
use wincode::{SchemaRead, SchemaWrite};

#[path = "../../typeinfo/examples/money_event.rs"]
#[allow(dead_code)]
mod money_event;

use money_event::{sample_events, MoneyEvent, MoneyEventSerializer};

/// Records per case; a power of two (the index wraps with a mask).
const RECORDS: usize = 8;

// ---------------------------------------------------------------------------------------
// The record types: one definition each, deriving all three libraries' traits.
// ---------------------------------------------------------------------------------------

/// Record 1: an order.
#[derive(Debug, Clone, PartialEq, TypeInfo, Serialize, Deserialize, SchemaWrite, SchemaRead)]
pub struct Order {
    pub user_id: String,
    pub amount: f64,
}

/// Record 2, the money event, as the serde and wincode peers see it: the fields of
/// `money_event::MoneyEvent` (which has no serde or wincode derives of its own).
///
/// The price: rust_decimal's own serde impl writes a *string* (and reads with
/// `deserialize_any`, which bincode and postcard refuse; its `serde-str` feature reads the
/// string back instead, paying decimal formatting and parsing), and rust_decimal has no
/// wincode support. So both peers get the representation a performance-minded user would
/// pick and the fastest one available: rust_decimal's native 16 bytes,
/// `Decimal::serialize()` / `Decimal::deserialize()` (flags with the scale and sign, then
/// the 96-bit mantissa) — a fixed-size array, written without a length by all three
/// peers. For serde through `#[serde(with = "decimal16")]`, for wincode through
/// `FromInto<DecimalWire, _>` (a `[u8; 16]` newtype). The peers still build a real
/// `Decimal` when reading.
#[derive(Debug, Clone, PartialEq, TypeInfo, Serialize, Deserialize, SchemaWrite, SchemaRead)]
pub struct MoneyEventPeer {
    pub symbol: String,
    #[serde(with = "decimal16")]
    #[wincode(with = "wincode::adapter::FromInto<DecimalWire, _>")]
    pub price: Decimal,
    pub timestamp_ms: i64,
    pub volume: Option<u64>,
}

impl From<&MoneyEvent> for MoneyEventPeer {
    fn from(e: &MoneyEvent) -> Self {
        Self {
            symbol: e.symbol.clone(),
            price: e.price,
            timestamp_ms: e.timestamp_ms,
            volume: e.volume,
        }
    }
}

/// rust_decimal's native 16-byte form, for serde.
mod decimal16 {
    use rust_decimal::Decimal;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(value: &Decimal, serializer: S) -> Result<S::Ok, S::Error> {
        value.serialize().serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Decimal, D::Error> {
        <[u8; 16]>::deserialize(deserializer).map(Decimal::deserialize)
    }
}

/// rust_decimal's native 16-byte form, for wincode.
#[derive(SchemaWrite, SchemaRead)]
pub struct DecimalWire([u8; 16]);

impl From<&Decimal> for DecimalWire {
    #[inline]
    fn from(d: &Decimal) -> Self {
        DecimalWire(d.serialize())
    }
}

impl From<DecimalWire> for Decimal {
    #[inline]
    fn from(w: DecimalWire) -> Self {
        Decimal::deserialize(w.0)
    }
}

/// Record 3: a web server's access-log line.
#[derive(Debug, Clone, PartialEq, TypeInfo, Serialize, Deserialize, SchemaWrite, SchemaRead)]
pub struct WebLog {
    pub ip_a: u8,
    pub ip_b: u8,
    pub ip_c: u8,
    pub ip_d: u8,
    pub method: String,
    pub path: String,
    pub referrer: String,
    pub user_agent: String,
    // Small counters opt into LEB128 varints, as bincode writes every integer by default.
    #[typeinfo(with = "typeinfo::VarU16Serializer")]
    pub status: u16,
    #[typeinfo(with = "typeinfo::VarU64Serializer")]
    pub bytes_sent: u64,
}

/// Record 4: a mesh triangle, three vertices and a normal.
#[derive(Debug, Clone, PartialEq, TypeInfo, Serialize, Deserialize, SchemaWrite, SchemaRead)]
pub struct Triangle {
    pub v0: [f32; 3],
    pub v1: [f32; 3],
    pub v2: [f32; 3],
    pub normal: [f32; 3],
}

/// Record 5: a game server's state update.
#[derive(Debug, Clone, PartialEq, TypeInfo, Serialize, Deserialize, SchemaWrite, SchemaRead)]
pub struct GameUpdate {
    #[typeinfo(with = "typeinfo::VarU64Serializer")]
    pub tick: u64,
    pub players: Vec<Player>,
    pub events: Vec<Event>,
}

#[derive(Debug, Clone, PartialEq, TypeInfo, Serialize, Deserialize, SchemaWrite, SchemaRead)]
pub struct Player {
    #[typeinfo(with = "typeinfo::VarU32Serializer")]
    pub id: u32,
    pub pos: [f32; 3],
    #[typeinfo(with = "typeinfo::OptionSerializer<typeinfo::VarU16Serializer>")]
    pub health: Option<u16>,
    pub inventory: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq, TypeInfo, Serialize, Deserialize, SchemaWrite, SchemaRead)]
pub struct Item {
    pub kind: ItemKind,
    #[typeinfo(with = "typeinfo::VarU16Serializer")]
    pub count: u16,
}

#[derive(
    Debug, Clone, Copy, PartialEq, TypeInfo, Serialize, Deserialize, SchemaWrite, SchemaRead,
)]
pub enum ItemKind {
    Sword,
    Shield,
    Potion,
    Gold,
}

#[derive(Debug, Clone, PartialEq, TypeInfo, Serialize, Deserialize, SchemaWrite, SchemaRead)]
pub enum Event {
    Join {
        #[typeinfo(with = "typeinfo::VarU32Serializer")]
        id: u32,
        name: String,
    },
    Leave(#[typeinfo(with = "typeinfo::VarU32Serializer")] u32),
    Chat {
        #[typeinfo(with = "typeinfo::VarU32Serializer")]
        from: u32,
        text: String,
    },
    Tick,
}

// ---------------------------------------------------------------------------------------
// Deterministic data.
// ---------------------------------------------------------------------------------------

/// splitmix64: deterministic, fast, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// A float in `[lo, hi)`.
    fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        lo + unit * (hi - lo)
    }
}

fn orders() -> Vec<Order> {
    let mut rng = Rng(0x5EED_1001);
    (0..RECORDS)
        .map(|i| Order {
            // Short numeric ids and UUID-like ones.
            user_id: if i % 2 == 0 {
                format!("user-{:06}", rng.below(1_000_000))
            } else {
                let (a, b) = (rng.next(), rng.next());
                format!(
                    "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                    a >> 32,
                    (a >> 16) & 0xffff,
                    a & 0xffff,
                    b >> 48,
                    b & 0xffff_ffff_ffff
                )
            },
            amount: (rng.below(500_000) as f64) / 100.0,
        })
        .collect()
}

fn money_events() -> Vec<MoneyEvent> {
    let mut events = sample_events();
    let mut rng = Rng(0x5EED_1002);
    let symbols = [
        "AAPL", "MSFT", "GBPJPY", "ETH-USD", "XAUUSD", "EURUSD", "NVDA",
    ];
    let mut ts = 1_700_000_000_000i64;
    while events.len() < RECORDS {
        ts += rng.below(5_000) as i64;
        let scale = [2u32, 4, 5][rng.below(3) as usize];
        events.push(MoneyEvent {
            symbol: (*rng.pick(&symbols)).to_owned(),
            price: Decimal::new(rng.below(100_000_000) as i64 + 1, scale),
            timestamp_ms: ts,
            volume: Some(rng.below(10_000_000)),
        });
    }
    events
}

fn weblogs() -> Vec<WebLog> {
    let mut rng = Rng(0x5EED_1003);
    let methods = ["GET", "GET", "GET", "POST", "PUT", "DELETE"];
    let paths = [
        "/",
        "/index.html",
        "/api/v1/orders/",
        "/static/js/app.3f9c2a1b.js",
        "/products/search?q=running+shoes&page=",
        "/images/banner-summer-sale.webp",
    ];
    let referrers = [
        "-",
        "https://www.google.com/",
        "https://shop.example.com/products/search?q=running+shoes&page=2",
        "https://shop.example.com/",
    ];
    let agents = [
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
        "curl/8.5.0",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    ];
    let statuses = [200u16, 200, 200, 304, 404, 301, 500];
    (0..RECORDS)
        .map(|_| {
            let mut path = (*rng.pick(&paths)).to_owned();
            if path.ends_with('/') && path.len() > 1 || path.ends_with('=') {
                path.push_str(&rng.below(100_000).to_string());
            }
            WebLog {
                ip_a: [10u8, 192, 172, 203][rng.below(4) as usize],
                ip_b: rng.next() as u8,
                ip_c: rng.next() as u8,
                ip_d: rng.next() as u8,
                method: (*rng.pick(&methods)).to_owned(),
                path,
                referrer: (*rng.pick(&referrers)).to_owned(),
                user_agent: (*rng.pick(&agents)).to_owned(),
                status: *rng.pick(&statuses),
                bytes_sent: rng.below(2_000_000),
            }
        })
        .collect()
}

fn triangles() -> Vec<Triangle> {
    let mut rng = Rng(0x5EED_1004);
    (0..RECORDS)
        .map(|_| {
            let mut v = || {
                [
                    rng.f32_in(-100.0, 100.0),
                    rng.f32_in(-100.0, 100.0),
                    rng.f32_in(-100.0, 100.0),
                ]
            };
            let (v0, v1, v2) = (v(), v(), v());
            let (a, b) = (
                [v1[0] - v0[0], v1[1] - v0[1], v1[2] - v0[2]],
                [v2[0] - v0[0], v2[1] - v0[1], v2[2] - v0[2]],
            );
            let n = [
                a[1] * b[2] - a[2] * b[1],
                a[2] * b[0] - a[0] * b[2],
                a[0] * b[1] - a[1] * b[0],
            ];
            let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2])
                .sqrt()
                .max(f32::MIN_POSITIVE);
            Triangle {
                v0,
                v1,
                v2,
                normal: [n[0] / len, n[1] / len, n[2] / len],
            }
        })
        .collect()
}

fn game_updates() -> Vec<GameUpdate> {
    let mut rng = Rng(0x5EED_1005);
    let names = ["alice", "bob", "carol_the_brave", "dave", "xX_sniper_Xx"];
    let chats = [
        "gg",
        "anyone up for a raid?",
        "lag!",
        "need healing at the north gate, bring potions",
    ];
    let kinds = [
        ItemKind::Sword,
        ItemKind::Shield,
        ItemKind::Potion,
        ItemKind::Gold,
    ];
    (0..RECORDS)
        .map(|i| {
            let players = (0..2 + rng.below(4))
                .map(|_| Player {
                    id: rng.below(10_000) as u32,
                    pos: [
                        rng.f32_in(-500.0, 500.0),
                        rng.f32_in(0.0, 50.0),
                        rng.f32_in(-500.0, 500.0),
                    ],
                    health: if rng.below(5) == 0 {
                        None
                    } else {
                        Some(rng.below(1_000) as u16)
                    },
                    inventory: (0..rng.below(5))
                        .map(|_| Item {
                            kind: *rng.pick(&kinds),
                            count: 1 + rng.below(99) as u16,
                        })
                        .collect(),
                })
                .collect();
            let events = (0..1 + rng.below(3))
                .map(|_| match rng.below(4) {
                    0 => Event::Join {
                        id: rng.below(10_000) as u32,
                        name: (*rng.pick(&names)).to_owned(),
                    },
                    1 => Event::Leave(rng.below(10_000) as u32),
                    2 => Event::Chat {
                        from: rng.below(10_000) as u32,
                        text: (*rng.pick(&chats)).to_owned(),
                    },
                    _ => Event::Tick,
                })
                .collect();
            GameUpdate {
                tick: 1_000_000 + 3 * i as u64,
                players,
                events,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The benchmark.
// ---------------------------------------------------------------------------------------

fn config(group: &mut BenchmarkGroup<'_, WallTime>) {
    group.throughput(Throughput::Elements(1));
    group.sample_size(30);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(2));
}

/// Cycles through `RECORDS` indices.
#[derive(Default)]
struct Cycle(usize);

impl Cycle {
    #[inline(always)]
    fn next(&mut self) -> usize {
        let i = self.0;
        self.0 = (i + 1) & (RECORDS - 1);
        i
    }
}

/// Average bytes per record of each library, for the size table.
struct Sizes {
    case: String,
    per_lib: Vec<(&'static str, f64, usize, usize)>, // (library, mean, min, max)
}

fn size_stats(lib: &'static str, bytes: &[Vec<u8>]) -> (&'static str, f64, usize, usize) {
    let lens: Vec<usize> = bytes.iter().map(Vec::len).collect();
    let mean = lens.iter().sum::<usize>() as f64 / lens.len() as f64;
    (
        lib,
        mean,
        *lens.iter().min().unwrap(),
        *lens.iter().max().unwrap(),
    )
}

/// Benchmarks one record type. `ours` and `ser` are what typeinfo serializes; `peers` are
/// the same records as the serde and wincode peers see them (the same type except for the
/// money event). With `derived`, the peer type's own derived typeinfo serializer is timed
/// as `typeinfo_derive` too.
fn bench_case<T, S, P>(
    c: &mut Criterion,
    case: &str,
    ours: &[T],
    ser: &S,
    peers: &[P],
    derived: bool,
) -> Sizes
where
    T: PartialEq + std::fmt::Debug,
    S: TypeSerializer<T>,
    P: TypeInfo
        + Serialize
        + DeserializeOwned
        + SchemaWrite<DefaultConfig, Src = P>
        + for<'de> SchemaRead<'de, DefaultConfig, Dst = P>
        + PartialEq
        + std::fmt::Debug,
{
    assert_eq!(ours.len(), RECORDS);
    assert_eq!(peers.len(), RECORDS);
    let bincode_cfg = bincode::config::standard();
    let derived_ser = typeinfo::serializer::<P>().expect("serializer");

    // The bytes each library reads back, and a check that each round-trips every record.
    let ti: Vec<Vec<u8>> = ours
        .iter()
        .map(|r| typeinfo::to_bytes(ser, r).expect("typeinfo serialize"))
        .collect();
    let td: Vec<Vec<u8>> = peers
        .iter()
        .map(|r| typeinfo::to_bytes(&derived_ser, r).expect("typeinfo serialize"))
        .collect();
    let bc: Vec<Vec<u8>> = peers
        .iter()
        .map(|r| bincode::serde::encode_to_vec(r, bincode_cfg).expect("bincode"))
        .collect();
    let pc: Vec<Vec<u8>> = peers
        .iter()
        .map(|r| postcard::to_allocvec(r).expect("postcard"))
        .collect();
    let wc: Vec<Vec<u8>> = peers
        .iter()
        .map(|r| wincode::serialize(r).expect("wincode"))
        .collect();
    for i in 0..RECORDS {
        assert_eq!(
            typeinfo::from_bytes(ser, &ti[i]).expect("typeinfo deserialize"),
            ours[i],
            "{case}[{i}] typeinfo"
        );
        assert_eq!(
            typeinfo::from_bytes(&derived_ser, &td[i]).expect("typeinfo deserialize"),
            peers[i],
            "{case}[{i}] derive"
        );
        let (v, n) = bincode::serde::decode_from_slice::<P, _>(&bc[i], bincode_cfg)
            .expect("bincode deserialize");
        assert_eq!(v, peers[i], "{case}[{i}] bincode");
        assert_eq!(n, bc[i].len(), "{case}[{i}] bincode: trailing bytes");
        assert_eq!(
            postcard::from_bytes::<P>(&pc[i]).expect("postcard deserialize"),
            peers[i],
            "{case}[{i}] postcard"
        );
        assert_eq!(
            wincode::deserialize_exact::<P>(&wc[i]).expect("wincode deserialize"),
            peers[i],
            "{case}[{i}] wincode"
        );
    }
    let sizes = Sizes {
        case: case.to_owned(),
        per_lib: {
            let mut v = vec![size_stats("typeinfo", &ti)];
            if derived {
                v.push(size_stats("typeinfo_derive", &td));
            }
            v.extend([
                size_stats("bincode", &bc),
                size_stats("postcard", &pc),
                size_stats("wincode", &wc),
            ]);
            v
        },
    };
    eprintln!(
        "{case}: bytes per record (mean over {RECORDS}): {}",
        sizes
            .per_lib
            .iter()
            .map(|(l, m, _, _)| format!("{l} {m:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Headroom so that no writer ever grows inside the timing loop.
    let capacity = 2 * [&ti, &td, &bc, &pc, &wc]
        .iter()
        .flat_map(|v| v.iter().map(Vec::len))
        .max()
        .unwrap()
        + 64;

    {
        let mut group = c.benchmark_group(format!("{case}/serialize"));
        config(&mut group);

        let mut out = DataOutputView::with_capacity(capacity);
        let mut at = Cycle::default();
        group.bench_function("typeinfo", |b| {
            b.iter(|| {
                out.clear();
                ser.serialize(black_box(&ours[at.next()]), &mut out)
                    .unwrap();
                black_box(out.as_slice());
            })
        });

        if derived {
            let mut out = DataOutputView::with_capacity(capacity);
            let mut at = Cycle::default();
            group.bench_function("typeinfo_derive", |b| {
                b.iter(|| {
                    out.clear();
                    derived_ser
                        .serialize(black_box(&peers[at.next()]), &mut out)
                        .unwrap();
                    black_box(out.as_slice());
                })
            });
        }

        let mut buf = Vec::<u8>::with_capacity(capacity);
        let mut at = Cycle::default();
        group.bench_function("bincode", |b| {
            b.iter(|| {
                buf.clear();
                bincode::serde::encode_into_std_write(
                    black_box(&peers[at.next()]),
                    &mut buf,
                    bincode_cfg,
                )
                .unwrap();
                black_box(buf.as_slice());
            })
        });

        let mut slice = vec![0u8; capacity];
        let mut at = Cycle::default();
        group.bench_function("postcard", |b| {
            b.iter(|| {
                let written = postcard::to_slice(black_box(&peers[at.next()]), &mut slice).unwrap();
                black_box(&*written);
            })
        });

        let mut buf = Vec::<u8>::with_capacity(capacity);
        let mut at = Cycle::default();
        group.bench_function("wincode", |b| {
            b.iter(|| {
                buf.clear();
                wincode::serialize_into(&mut buf, black_box(&peers[at.next()])).unwrap();
                black_box(buf.as_slice());
            })
        });

        // The other writer of each competitor.
        let mut slice = vec![0u8; capacity];
        let mut at = Cycle::default();
        group.bench_function("bincode_slice", |b| {
            b.iter(|| {
                let n = bincode::serde::encode_into_slice(
                    black_box(&peers[at.next()]),
                    &mut slice,
                    bincode_cfg,
                )
                .unwrap();
                black_box(&slice[..n]);
            })
        });

        let mut ext = Vec::<u8>::with_capacity(capacity);
        let mut at = Cycle::default();
        group.bench_function("postcard_extend", |b| {
            b.iter(|| {
                ext.clear();
                ext = postcard::to_extend(black_box(&peers[at.next()]), std::mem::take(&mut ext))
                    .unwrap();
                black_box(ext.as_slice());
            })
        });

        let mut slice = vec![0u8; capacity];
        let mut at = Cycle::default();
        group.bench_function("wincode_slice", |b| {
            b.iter(|| {
                let mut dst: &mut [u8] = &mut slice;
                wincode::serialize_into(&mut dst, black_box(&peers[at.next()])).unwrap();
                let n = capacity - dst.len();
                black_box(&slice[..n]);
            })
        });
        group.finish();
    }

    {
        let mut group = c.benchmark_group(format!("{case}/deserialize"));
        config(&mut group);

        let mut at = Cycle::default();
        group.bench_function("typeinfo", |b| {
            b.iter(|| {
                ser.deserialize(&mut DataInputView::new(black_box(&ti[at.next()])))
                    .unwrap()
            })
        });
        if derived {
            let mut at = Cycle::default();
            group.bench_function("typeinfo_derive", |b| {
                b.iter(|| {
                    derived_ser
                        .deserialize(&mut DataInputView::new(black_box(&td[at.next()])))
                        .unwrap()
                })
            });
        }
        let mut at = Cycle::default();
        group.bench_function("bincode", |b| {
            b.iter(|| {
                bincode::serde::decode_from_slice::<P, _>(black_box(&bc[at.next()]), bincode_cfg)
                    .unwrap()
                    .0
            })
        });
        let mut at = Cycle::default();
        group.bench_function("postcard", |b| {
            b.iter(|| postcard::from_bytes::<P>(black_box(&pc[at.next()])).unwrap())
        });
        let mut at = Cycle::default();
        group.bench_function("wincode", |b| {
            b.iter(|| wincode::deserialize::<P>(black_box(&wc[at.next()])).unwrap())
        });
        group.finish();
    }

    sizes
}

/// Serialize then deserialize one money event, per library (the issue's "round trip").
fn bench_money_roundtrip(c: &mut Criterion, ours: &[MoneyEvent], peers: &[MoneyEventPeer]) {
    let ser = MoneyEventSerializer::default();
    let derived_ser = typeinfo::serializer::<MoneyEventPeer>().expect("serializer");
    let bincode_cfg = bincode::config::standard();
    let capacity = 256;

    let mut group = c.benchmark_group("money_event/roundtrip");
    config(&mut group);

    let mut out = DataOutputView::with_capacity(capacity);
    let mut at = Cycle::default();
    group.bench_function("typeinfo", |b| {
        b.iter(|| {
            out.clear();
            ser.serialize(black_box(&ours[at.next()]), &mut out)
                .unwrap();
            ser.deserialize(&mut DataInputView::new(black_box(out.as_slice())))
                .unwrap()
        })
    });
    let mut out = DataOutputView::with_capacity(capacity);
    let mut at = Cycle::default();
    group.bench_function("typeinfo_derive", |b| {
        b.iter(|| {
            out.clear();
            derived_ser
                .serialize(black_box(&peers[at.next()]), &mut out)
                .unwrap();
            derived_ser
                .deserialize(&mut DataInputView::new(black_box(out.as_slice())))
                .unwrap()
        })
    });
    let mut buf = Vec::<u8>::with_capacity(capacity);
    let mut at = Cycle::default();
    group.bench_function("bincode", |b| {
        b.iter(|| {
            buf.clear();
            bincode::serde::encode_into_std_write(
                black_box(&peers[at.next()]),
                &mut buf,
                bincode_cfg,
            )
            .unwrap();
            bincode::serde::decode_from_slice::<MoneyEventPeer, _>(black_box(&buf), bincode_cfg)
                .unwrap()
                .0
        })
    });
    let mut slice = vec![0u8; capacity];
    let mut at = Cycle::default();
    group.bench_function("postcard", |b| {
        b.iter(|| {
            let written = postcard::to_slice(black_box(&peers[at.next()]), &mut slice).unwrap();
            postcard::from_bytes::<MoneyEventPeer>(black_box(&*written)).unwrap()
        })
    });
    let mut buf = Vec::<u8>::with_capacity(capacity);
    let mut at = Cycle::default();
    group.bench_function("wincode", |b| {
        b.iter(|| {
            buf.clear();
            wincode::serialize_into(&mut buf, black_box(&peers[at.next()])).unwrap();
            wincode::deserialize::<MoneyEventPeer>(black_box(&buf)).unwrap()
        })
    });
    group.finish();
}

/// Where criterion writes its results (the rule criterion itself follows, short of
/// running `cargo metadata`).
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(target) => PathBuf::from(target).join("criterion"),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/criterion"),
    }
}

fn write_sizes(all: &[Sizes]) {
    let mut json = String::from("{\n");
    for (ci, s) in all.iter().enumerate() {
        json.push_str(&format!("  \"{}\": {{", s.case));
        for (li, (lib, mean, min, max)) in s.per_lib.iter().enumerate() {
            json.push_str(&format!(
                "{}\"{lib}\": {{\"mean\": {mean}, \"min\": {min}, \"max\": {max}}}",
                if li == 0 { "" } else { ", " }
            ));
        }
        json.push_str(if ci + 1 == all.len() { "}\n" } else { "},\n" });
    }
    json.push_str("}\n");
    let dir = criterion_dir();
    let path = dir.join("records_sizes.json");
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, json)) {
        Ok(()) => eprintln!("bytes per record written to {}", path.display()),
        Err(e) => eprintln!("could not write {}: {e}", path.display()),
    }
}

fn benches(c: &mut Criterion) {
    let mut sizes = Vec::new();

    let data = orders();
    sizes.push(bench_case(
        c,
        "order",
        &data,
        &typeinfo::serializer::<Order>().unwrap(),
        &data,
        false,
    ));

    let events = money_events();
    let peers: Vec<MoneyEventPeer> = events.iter().map(MoneyEventPeer::from).collect();
    sizes.push(bench_case(
        c,
        "money_event",
        &events,
        &MoneyEventSerializer::default(),
        &peers,
        true,
    ));
    bench_money_roundtrip(c, &events, &peers);

    let data = weblogs();
    sizes.push(bench_case(
        c,
        "weblog",
        &data,
        &typeinfo::serializer::<WebLog>().unwrap(),
        &data,
        false,
    ));

    let data = triangles();
    sizes.push(bench_case(
        c,
        "triangle",
        &data,
        &typeinfo::serializer::<Triangle>().unwrap(),
        &data,
        false,
    ));

    let data = game_updates();
    sizes.push(bench_case(
        c,
        "game_update",
        &data,
        &typeinfo::serializer::<GameUpdate>().unwrap(),
        &data,
        false,
    ));

    write_sizes(&sizes);
}

criterion_group!(records, benches);
criterion_main!(records);
