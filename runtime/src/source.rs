//! Sources: collections and iterators, number sequences, lines of a file, generators.
//!
//! A collection, an iterator and a file are read by one subtask (as Flink's non-parallel
//! sources); a sequence is split into contiguous ranges and a generator into strides, one per
//! subtask. Every source sends the maximal watermark when it is exhausted.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::operator::{Output, SourceFunction};

/// Emits an iterator's items.
pub(crate) struct IteratorSource<T> {
    pub(crate) iter: Box<dyn Iterator<Item = T>>,
    pub(crate) consumed: u64,
}

impl<T> IteratorSource<T> {
    pub(crate) fn new(iter: Box<dyn Iterator<Item = T>>) -> Self {
        IteratorSource { iter, consumed: 0 }
    }
}

impl<T: 'static> SourceFunction<T> for IteratorSource<T> {
    fn run(&mut self, out: &mut Output<T>, budget: usize) -> Result<bool> {
        for _ in 0..budget {
            match self.iter.next() {
                Some(v) => {
                    self.consumed += 1;
                    out.collect_untimed(v);
                }
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    fn position(&self) -> Vec<u8> {
        self.consumed.to_le_bytes().to_vec()
    }

    fn seek(&mut self, position: &[u8]) -> Result<()> {
        let n = read_u64(position)?;
        for i in 0..n {
            if self.iter.next().is_none() {
                return Err(Error::Corrupt(format!(
                    "the source's position {n} is past its end ({i} items)"
                )));
            }
        }
        self.consumed = n;
        Ok(())
    }
}

fn read_u64(position: &[u8]) -> Result<u64> {
    position.try_into().map(u64::from_le_bytes).map_err(|_| {
        Error::Corrupt(format!(
            "a source position of {} bytes, expected 8",
            position.len()
        ))
    })
}

/// Subtask `index` of `parallelism` takes `[from + n*index/p, from + n*(index+1)/p)` of a sequence.
pub(crate) fn sequence_range(
    from: i64,
    to: i64,
    index: usize,
    parallelism: usize,
) -> std::ops::RangeInclusive<i64> {
    if to < from {
        #[allow(clippy::reversed_empty_ranges)]
        return 1..=0;
    }
    let n = (to as i128) - (from as i128) + 1;
    let start = from as i128 + n * index as i128 / parallelism as i128;
    let end = from as i128 + n * (index as i128 + 1) / parallelism as i128 - 1;
    if end < start {
        #[allow(clippy::reversed_empty_ranges)]
        return 1..=0;
    }
    (start as i64)..=(end as i64)
}

/// Emits `generate(i)` for `i = index, index + parallelism, ...` below `count`.
pub(crate) struct GeneratorSource<T, F> {
    pub(crate) next: u64,
    pub(crate) step: u64,
    pub(crate) count: u64,
    pub(crate) generate: std::sync::Arc<F>,
    pub(crate) _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: 'static, F: Fn(u64) -> T + Send + Sync + 'static> SourceFunction<T>
    for GeneratorSource<T, F>
{
    #[inline]
    fn run(&mut self, out: &mut Output<T>, budget: usize) -> Result<bool> {
        out.msgs.reserve(budget);
        for _ in 0..budget {
            if self.next >= self.count {
                return Ok(false);
            }
            out.collect_untimed((self.generate)(self.next));
            self.next += self.step;
        }
        Ok(self.next < self.count)
    }

    fn position(&self) -> Vec<u8> {
        self.next.to_le_bytes().to_vec()
    }

    fn seek(&mut self, position: &[u8]) -> Result<()> {
        self.next = read_u64(position)?;
        Ok(())
    }
}

/// Emits the lines of a text file (without line endings).
pub(crate) struct FileSource {
    pub(crate) path: PathBuf,
    pub(crate) reader: BufReader<File>,
    pub(crate) line: String,
    /// Bytes consumed (the position).
    pub(crate) offset: u64,
}

impl FileSource {
    pub(crate) fn open(path: PathBuf) -> Result<Self> {
        let file = File::open(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        Ok(FileSource {
            path,
            reader: BufReader::with_capacity(1 << 16, file),
            line: String::new(),
            offset: 0,
        })
    }
}

impl SourceFunction<String> for FileSource {
    fn run(&mut self, out: &mut Output<String>, budget: usize) -> Result<bool> {
        for _ in 0..budget {
            self.line.clear();
            let n = self
                .reader
                .read_line(&mut self.line)
                .map_err(|source| Error::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if n == 0 {
                return Ok(false);
            }
            self.offset += n as u64;
            let line = self.line.strip_suffix('\n').unwrap_or(&self.line);
            let line = line.strip_suffix('\r').unwrap_or(line);
            out.collect_untimed(line.to_owned());
        }
        Ok(true)
    }

    fn position(&self) -> Vec<u8> {
        self.offset.to_le_bytes().to_vec()
    }

    fn seek(&mut self, position: &[u8]) -> Result<()> {
        use std::io::Seek;
        let offset = read_u64(position)?;
        self.reader
            .seek(std::io::SeekFrom::Start(offset))
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })?;
        self.offset = offset;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::sequence_range;

    #[test]
    fn sequence_ranges_cover_the_sequence_once() {
        for p in 1..6 {
            let all: Vec<i64> = (0..p).flat_map(|i| sequence_range(-3, 10, i, p)).collect();
            assert_eq!(all, (-3..=10).collect::<Vec<_>>(), "parallelism {p}");
        }
        assert_eq!(sequence_range(5, 4, 0, 1).count(), 0);
    }
}
