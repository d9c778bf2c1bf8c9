//! The job's sources: the events of a file (one split, read in file order by one subtask),
//! the events of the `nexmark` crate's generator (one split per subtask, event `n` in split
//! `n % splits`, each split in event order), and q13's side table.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use nexmark::config::NexmarkConfig;
use nexmark::EventGenerator;
use typeinfo_runtime::{Boundedness, Error, ReadStatus, Result, Source, SourceOutput, SplitReader};

use crate::model::{Event, SideRow};
use crate::parse::{self, Projection};

/// An error of the input at `path`, line `line` (1-based).
fn input_error(path: &std::path::Path, line: u64, message: impl std::fmt::Display) -> Error {
    Error::function(format!("{}: line {line}: {message}", path.display()))
}

/// The events of an event file.
#[derive(Debug, Clone)]
pub struct EventFile {
    pub path: PathBuf,
    /// What the query reads of the events.
    pub keep: Projection,
    /// Lines read, added when the file has been read to its end.
    pub lines: Arc<AtomicU64>,
}

/// Reads an event file line by line.
pub struct EventFileReader {
    path: PathBuf,
    keep: Projection,
    total: Arc<AtomicU64>,
    input: BufReader<File>,
    line: Vec<u8>,
    /// Lines read so far.
    lines: u64,
    last_time: i64,
}

impl EventFileReader {
    fn open(path: &std::path::Path, total: &Arc<AtomicU64>, keep: Projection) -> Result<Self> {
        let file = File::open(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(EventFileReader {
            path: path.to_owned(),
            keep,
            total: Arc::clone(total),
            input: BufReader::with_capacity(1 << 20, file),
            line: Vec::with_capacity(1024),
            lines: 0,
            last_time: i64::MIN,
        })
    }
}

impl SplitReader<Event> for EventFileReader {
    type Position = u64;

    fn read(&mut self, out: &mut SourceOutput<'_, Event>, budget: usize) -> Result<ReadStatus> {
        for _ in 0..budget {
            // A line wholly in the read buffer is parsed there; one that straddles its end
            // is copied together first.
            let buffered = self.input.fill_buf().map_err(|e| {
                input_error(&self.path, self.lines + 1, format_args!("read error: {e}"))
            })?;
            if buffered.is_empty() {
                self.total.fetch_add(self.lines, Ordering::Relaxed);
                return Ok(ReadStatus::Finished);
            }
            let parsed = match memchr::memchr(b'\n', buffered) {
                Some(end) => {
                    let parsed = parse::event(&buffered[..end], self.lines, self.keep);
                    self.input.consume(end + 1);
                    parsed
                }
                None => {
                    self.line.clear();
                    self.input.read_until(b'\n', &mut self.line).map_err(|e| {
                        input_error(&self.path, self.lines + 1, format_args!("read error: {e}"))
                    })?;
                    let mut bytes = self.line.as_slice();
                    if let Some(stripped) = bytes.strip_suffix(b"\n") {
                        bytes = stripped;
                    }
                    parse::event(bytes, self.lines, self.keep)
                }
            };
            self.lines += 1;
            let (t, event) = parsed.map_err(|e| input_error(&self.path, self.lines, e))?;
            if t < self.last_time {
                return Err(input_error(
                    &self.path,
                    self.lines,
                    format_args!(
                        "date_time {t} is before the previous line's {}; event files must have non-decreasing timestamps",
                        self.last_time
                    ),
                ));
            }
            self.last_time = t;
            if let Some(event) = event {
                out.collect_with_timestamp(event, t);
            }
        }
        Ok(ReadStatus::More)
    }

    fn position(&self) -> u64 {
        self.lines
    }

    fn seek(&mut self, position: u64) -> Result<()> {
        let mut fresh = EventFileReader::open(&self.path, &self.total, self.keep)?;
        while fresh.lines < position {
            fresh.line.clear();
            let n = fresh
                .input
                .read_until(b'\n', &mut fresh.line)
                .map_err(|e| input_error(&self.path, fresh.lines + 1, e))?;
            if n == 0 {
                return Err(input_error(&self.path, position, "the file is shorter now"));
            }
            fresh.lines += 1;
        }
        *self = fresh;
        Ok(())
    }
}

impl Source<Event> for EventFile {
    type Split = ();
    type Reader = EventFileReader;

    fn splits(&self, _parallelism: usize) -> Result<Vec<()>> {
        Ok(vec![()])
    }

    fn reader(&self, _split: &()) -> Result<EventFileReader> {
        EventFileReader::open(&self.path, &self.lines, self.keep)
    }

    fn boundedness(&self) -> Boundedness {
        Boundedness::Bounded
    }
}

/// The generator's configuration: the crate's defaults with a fixed `base_time`.
pub fn generator_config(base_time: u64) -> NexmarkConfig {
    NexmarkConfig {
        base_time,
        ..NexmarkConfig::default()
    }
}

/// Converts a generated event (integers of the crate's types) to a record.
pub fn from_generated(event: nexmark::event::Event, seq: u64) -> Event {
    use crate::model::{Auction, Bid, Person};
    let int = |v: usize| v as u64;
    let time = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    match event {
        nexmark::event::Event::Person(p) => Event::Person(Person {
            id: int(p.id),
            name: p.name,
            email_address: p.email_address,
            credit_card: p.credit_card,
            city: p.city,
            state: p.state,
            date_time: time(p.date_time),
            extra: p.extra,
            seq,
        }),
        nexmark::event::Event::Auction(a) => Event::Auction(Auction {
            id: int(a.id),
            item_name: a.item_name,
            description: a.description,
            initial_bid: int(a.initial_bid),
            reserve: int(a.reserve),
            date_time: time(a.date_time),
            expires: time(a.expires),
            seller: int(a.seller),
            category: int(a.category),
            extra: a.extra,
            seq,
        }),
        nexmark::event::Event::Bid(b) => Event::Bid(Bid {
            auction: int(b.auction),
            bidder: int(b.bidder),
            price: int(b.price),
            channel: b.channel,
            url: b.url,
            date_time: time(b.date_time),
            extra: b.extra,
            seq,
        }),
    }
}

/// `count` generated events, in `splits` interleaved splits.
#[derive(Debug, Clone)]
pub struct Generated {
    pub count: u64,
    pub splits: u64,
    pub base_time: u64,
}

/// One split of [`Generated`]: events `split, split + splits, ...` below `count`.
pub struct GeneratedReader {
    generator: EventGenerator,
    next: u64,
    step: u64,
    count: u64,
}

impl SplitReader<Event> for GeneratedReader {
    type Position = u64;

    fn read(&mut self, out: &mut SourceOutput<'_, Event>, budget: usize) -> Result<ReadStatus> {
        for _ in 0..budget {
            if self.next >= self.count {
                return Ok(ReadStatus::Finished);
            }
            let Some(event) = self.generator.next() else {
                return Ok(ReadStatus::Finished);
            };
            let event = from_generated(event, self.next);
            let t = event.date_time();
            out.collect_with_timestamp(event, t);
            self.next += self.step;
        }
        Ok(ReadStatus::More)
    }

    fn position(&self) -> u64 {
        self.next
    }

    fn seek(&mut self, position: u64) -> Result<()> {
        self.generator = self.generator.clone().with_offset(position);
        self.next = position;
        Ok(())
    }
}

impl Source<Event> for Generated {
    type Split = u64;
    type Reader = GeneratedReader;

    fn splits(&self, _parallelism: usize) -> Result<Vec<u64>> {
        Ok((0..self.splits.max(1)).collect())
    }

    fn reader(&self, split: &u64) -> Result<GeneratedReader> {
        let step = self.splits.max(1);
        Ok(GeneratedReader {
            generator: EventGenerator::new(generator_config(self.base_time))
                .with_offset(*split)
                .with_step(step),
            next: *split,
            step,
            count: self.count,
        })
    }

    fn boundedness(&self) -> Boundedness {
        Boundedness::Bounded
    }
}

/// q13's side table from a file (`key,value` lines), or the built-in `k,k` for `k` in
/// `0..10000` (the generator mode's table).
#[derive(Debug, Clone)]
pub struct SideTable {
    pub path: Option<PathBuf>,
}

/// Reads the side table whole (10,000 short lines).
pub struct SideTableReader {
    rows: std::vec::IntoIter<SideRow>,
    at: u64,
}

impl SideTable {
    fn rows(&self) -> Result<Vec<SideRow>> {
        let Some(path) = &self.path else {
            return Ok((0..10_000)
                .map(|k| SideRow {
                    key: k,
                    value: k.to_string(),
                })
                .collect());
        };
        let mut bytes = Vec::new();
        File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
        let mut rows = Vec::new();
        let mut body = bytes.as_slice();
        if let Some(stripped) = body.strip_suffix(b"\n") {
            body = stripped;
        }
        if bytes.is_empty() {
            return Ok(rows);
        }
        for (i, line) in body.split(|b| *b == b'\n').enumerate() {
            let line_no = i as u64 + 1;
            let text = std::str::from_utf8(line)
                .map_err(|e| input_error(path, line_no, format_args!("not valid UTF-8: {e}")))?;
            rows.push(parse::side_row(text).map_err(|e| input_error(path, line_no, e))?);
        }
        Ok(rows)
    }
}

impl SplitReader<SideRow> for SideTableReader {
    type Position = u64;

    fn read(&mut self, out: &mut SourceOutput<'_, SideRow>, budget: usize) -> Result<ReadStatus> {
        for _ in 0..budget {
            match self.rows.next() {
                Some(row) => out.collect(row),
                None => return Ok(ReadStatus::Finished),
            }
            self.at += 1;
        }
        Ok(ReadStatus::More)
    }

    fn position(&self) -> u64 {
        self.at
    }

    fn seek(&mut self, position: u64) -> Result<()> {
        let skip = position.saturating_sub(self.at);
        for _ in 0..skip {
            self.rows.next();
        }
        self.at = self.at.max(position);
        Ok(())
    }
}

impl Source<SideRow> for SideTable {
    type Split = ();
    type Reader = SideTableReader;

    fn splits(&self, _parallelism: usize) -> Result<Vec<()>> {
        Ok(vec![()])
    }

    fn reader(&self, _split: &()) -> Result<SideTableReader> {
        Ok(SideTableReader {
            rows: self.rows()?.into_iter(),
            at: 0,
        })
    }

    fn boundedness(&self) -> Boundedness {
        Boundedness::Bounded
    }
}
