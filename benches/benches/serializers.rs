//! typeinfo's serializers beside bincode 2 (serde, `config::standard()`), postcard, and —
//! for vectors of plain-old-data numbers — a raw `memcpy` baseline.
//!
//! Run (from the repository root):
//!
//! ```text
//! export CARGO_TARGET_DIR=$HOME/.cache/typeinfo-target
//! cargo bench -p typeinfo-benches --bench serializers
//! python3 benches/report.py
//! ```
//!
//! Groups are `<case>/serialize` and `<case>/deserialize` for the cases `vec_u64`
//! (1,000 `u64` of mixed magnitudes), `strings` (100 ASCII strings of 5..40 chars) and
//! `vec_f32` (1,000 `f32`). Functions:
//!
//! - `typeinfo`: `typeinfo::serializer::<T>()` into a reused `DataOutputView`.
//! - `bincode`: `bincode::serde::encode_into_std_write` into a reused `Vec<u8>`.
//! - `postcard`: `postcard::to_slice` into a reused buffer (its fastest writer).
//! - `memcpy` (numbers only): the bytes of the slice copied into a reused `Vec<u8>`, and
//!   back into a fresh `Vec<T>`.
//! - `bincode_slice`, `postcard_extend` (serialize only): the other writer of each
//!   library, so that the comparison is against the faster one either way.
//!
//! Fairness: every serializer writes into an output buffer allocated once outside the
//! timing loop (cleared, then written); every deserializer builds the owned value from
//! the bytes its own serializer wrote, and the value is dropped inside the timing loop
//! for all alike.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test (or bench) panics on what it does not expect

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use serde::de::DeserializeOwned;
use serde::Serialize;
use typeinfo::{DataInputView, DataOutputView, TypeInfo, TypeSerializer};

const N_NUMBERS: usize = 1_000;
const N_STRINGS: usize = 100;

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
}

/// `u64`s whose magnitudes spread evenly over 0..=64 bits (every varint length occurs).
fn vec_u64() -> Vec<u64> {
    let mut rng = Rng(0x5EED_0001);
    (0..N_NUMBERS)
        .map(|_| {
            let bits = (rng.next() % 65) as u32;
            rng.next().checked_shr(64 - bits).unwrap_or(0)
        })
        .collect()
}

/// ASCII strings of 5..40 characters.
fn strings() -> Vec<String> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,";
    let mut rng = Rng(0x5EED_0002);
    (0..N_STRINGS)
        .map(|_| {
            let len = 5 + (rng.next() % 35) as usize;
            (0..len)
                .map(|_| ALPHABET[(rng.next() % ALPHABET.len() as u64) as usize] as char)
                .collect()
        })
        .collect()
}

/// Finite `f32`s of mixed sign and magnitude.
fn vec_f32() -> Vec<f32> {
    let mut rng = Rng(0x5EED_0003);
    (0..N_NUMBERS)
        .map(|_| {
            let unit = (rng.next() >> 40) as f32 / (1u64 << 24) as f32; // [0, 1)
            let scale = 10f32.powi((rng.next() % 13) as i32 - 6); // 1e-6 ..= 1e6
            let sign = if rng.next() & 1 == 0 { 1.0 } else { -1.0 };
            sign * unit * scale
        })
        .collect()
}

/// The in-memory bytes of a vector of numbers.
#[allow(unsafe_code)] // the raw memcpy baseline itself
#[allow(clippy::ptr_arg)] // must match `fn(&T) -> &[u8]` with `T = Vec<_>`
fn pod_bytes<T: Copy>(values: &Vec<T>) -> &[u8] {
    // SAFETY: only called with primitive numbers (u64, f32): no padding, every byte is
    // initialized; the byte slice borrows `values`.
    unsafe {
        std::slice::from_raw_parts(
            values.as_ptr().cast::<u8>(),
            std::mem::size_of_val(values.as_slice()),
        )
    }
}

/// A fresh `Vec<T>` holding the numbers whose in-memory bytes are `bytes`.
#[allow(unsafe_code)] // the raw memcpy baseline itself
fn pod_from_bytes<T: Copy>(bytes: &[u8]) -> Vec<T> {
    let n = bytes.len() / std::mem::size_of::<T>();
    let mut v = Vec::<T>::with_capacity(n);
    // SAFETY: `T` is a primitive number (every bit pattern is valid); the capacity holds
    // `n` elements, exactly `n * size_of::<T>()` bytes are copied, and the fresh
    // allocation cannot overlap `bytes`.
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            v.as_mut_ptr().cast::<u8>(),
            n * std::mem::size_of::<T>(),
        );
        v.set_len(n);
    }
    v
}

/// For plain-old-data vectors: the in-memory bytes of a value, and a fresh value from them.
type Memcpy<T> = Option<(fn(&T) -> &[u8], fn(&[u8]) -> T)>;

fn config(group: &mut BenchmarkGroup<'_, WallTime>, throughput: Throughput) {
    group.throughput(throughput);
    group.sample_size(30);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(2));
}

fn bench_case<T>(c: &mut Criterion, case: &str, data: &T, throughput: Throughput, memcpy: Memcpy<T>)
where
    T: TypeInfo + Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let ser = typeinfo::serializer::<T>().expect("serializer");
    let bincode_cfg = bincode::config::standard();

    // The bytes each library reads back, and a check that each round-trips.
    let ti_bytes = typeinfo::to_bytes(&ser, data).expect("typeinfo serialize");
    let bc_bytes = bincode::serde::encode_to_vec(data, bincode_cfg).expect("bincode serialize");
    let pc_bytes = postcard::to_allocvec(data).expect("postcard serialize");
    assert_eq!(
        &typeinfo::from_bytes(&ser, &ti_bytes).expect("typeinfo deserialize"),
        data
    );
    assert_eq!(
        &bincode::serde::decode_from_slice::<T, _>(&bc_bytes, bincode_cfg)
            .expect("bincode")
            .0,
        data
    );
    assert_eq!(
        &postcard::from_bytes::<T>(&pc_bytes).expect("postcard"),
        data
    );
    if let Some((to, from)) = memcpy {
        assert_eq!(&from(to(data)), data);
    }
    eprintln!(
        "{case}: typeinfo {} bytes, bincode {} bytes, postcard {} bytes{}",
        ti_bytes.len(),
        bc_bytes.len(),
        pc_bytes.len(),
        memcpy
            .map(|(to, _)| format!(", memcpy {} bytes", to(data).len()))
            .unwrap_or_default()
    );
    // Headroom so that no writer ever grows inside the timing loop.
    let capacity = 2 * ti_bytes.len().max(bc_bytes.len()).max(pc_bytes.len()) + 64;

    {
        let mut group = c.benchmark_group(format!("{case}/serialize"));
        config(&mut group, throughput.clone());

        let mut out = DataOutputView::with_capacity(capacity);
        group.bench_function("typeinfo", |b| {
            b.iter(|| {
                out.clear();
                ser.serialize(black_box(data), &mut out).unwrap();
                black_box(out.as_slice());
            })
        });

        let mut buf = Vec::<u8>::with_capacity(capacity);
        group.bench_function("bincode", |b| {
            b.iter(|| {
                buf.clear();
                bincode::serde::encode_into_std_write(black_box(data), &mut buf, bincode_cfg)
                    .unwrap();
                black_box(buf.as_slice());
            })
        });

        let mut slice = vec![0u8; capacity];
        group.bench_function("postcard", |b| {
            b.iter(|| {
                let written = postcard::to_slice(black_box(data), &mut slice).unwrap();
                black_box(&*written);
            })
        });

        if let Some((to, _)) = memcpy {
            let mut buf = Vec::<u8>::with_capacity(capacity);
            group.bench_function("memcpy", |b| {
                b.iter(|| {
                    buf.clear();
                    buf.extend_from_slice(to(black_box(data)));
                    black_box(buf.as_slice());
                })
            });
        }

        // The other writer of each competitor.
        let mut slice = vec![0u8; capacity];
        group.bench_function("bincode_slice", |b| {
            b.iter(|| {
                let n = bincode::serde::encode_into_slice(black_box(data), &mut slice, bincode_cfg)
                    .unwrap();
                black_box(&slice[..n]);
            })
        });

        let mut ext = Vec::<u8>::with_capacity(capacity);
        group.bench_function("postcard_extend", |b| {
            b.iter(|| {
                ext.clear();
                ext = postcard::to_extend(black_box(data), std::mem::take(&mut ext)).unwrap();
                black_box(ext.as_slice());
            })
        });
        group.finish();
    }

    {
        let mut group = c.benchmark_group(format!("{case}/deserialize"));
        config(&mut group, throughput);

        group.bench_function("typeinfo", |b| {
            b.iter(|| {
                ser.deserialize(&mut DataInputView::new(black_box(&ti_bytes)))
                    .unwrap()
            })
        });
        group.bench_function("bincode", |b| {
            b.iter(|| {
                bincode::serde::decode_from_slice::<T, _>(black_box(&bc_bytes), bincode_cfg)
                    .unwrap()
                    .0
            })
        });
        group.bench_function("postcard", |b| {
            b.iter(|| postcard::from_bytes::<T>(black_box(&pc_bytes)).unwrap())
        });
        if let Some((to, from)) = memcpy {
            let raw = to(data).to_vec();
            group.bench_function("memcpy", |b| b.iter(|| from(black_box(&raw))));
        }
        group.finish();
    }
}

fn benches(c: &mut Criterion) {
    let u64s = vec_u64();
    bench_case(
        c,
        "vec_u64",
        &u64s,
        Throughput::Bytes(std::mem::size_of_val(u64s.as_slice()) as u64),
        Some((pod_bytes::<u64>, pod_from_bytes::<u64>)),
    );

    let strs = strings();
    bench_case(
        c,
        "strings",
        &strs,
        Throughput::Elements(strs.len() as u64),
        None,
    );

    let f32s = vec_f32();
    bench_case(
        c,
        "vec_f32",
        &f32s,
        Throughput::Bytes(std::mem::size_of_val(f32s.as_slice()) as u64),
        Some((pod_bytes::<f32>, pod_from_bytes::<f32>)),
    );
}

criterion_group!(serializers, benches);
criterion_main!(serializers);
