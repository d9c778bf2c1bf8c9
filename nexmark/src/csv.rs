//! CSV output (QUERIES.md "CSV format"): rows written field by field into a byte buffer, and
//! the sinks that print or count them.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use typeinfo_runtime::{Data, Result, RuntimeContext, Sink, SinkContext, SinkWriter};

/// Writes one record as a CSV row, without its line end.
pub type Format<T> = Arc<dyn Fn(&T, &mut Vec<u8>) + Send + Sync>;

/// Appends fields, each followed by a comma except the last.
pub struct Fields<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Fields<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Fields { out, first: true }
    }

    fn sep(&mut self) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
    }

    pub fn u(&mut self, v: u64) -> &mut Self {
        self.sep();
        push_u64(self.out, v);
        self
    }

    pub fn i(&mut self, v: i64) -> &mut Self {
        self.sep();
        self.out
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        self
    }

    pub fn s(&mut self, v: &str) -> &mut Self {
        self.sep();
        self.out.extend_from_slice(v.as_bytes());
        self
    }

    /// DECIMAL(23,3) `0.908 * price`: `price * 908` thousandths.
    pub fn eur(&mut self, price: u64) -> &mut Self {
        self.milli(u128::from(price) * 908)
    }

    /// A decimal of `v` thousandths, with three fraction digits.
    pub fn milli(&mut self, v: u128) -> &mut Self {
        self.sep();
        // Within u64 (every price below 2^64 / 908, about 2 * 10^16) the division is a u64
        // one, not the software u128 division.
        let frac = match u64::try_from(v) {
            Ok(v) => {
                push_u64(self.out, v / 1000);
                v % 1000
            }
            Err(_) => {
                let whole = v / 1000;
                self.out
                    .extend_from_slice(itoa::Buffer::new().format(whole).as_bytes());
                (v % 1000) as u64
            }
        };
        self.out.push(b'.');
        self.out.extend_from_slice(&[
            b'0' + (frac / 100) as u8,
            b'0' + (frac / 10 % 10) as u8,
            b'0' + (frac % 10) as u8,
        ]);
        self
    }

    /// `yyyy-MM-dd` of an epoch-ms time (UTC).
    pub fn day(&mut self, t: i64) -> &mut Self {
        self.sep();
        push_day(self.out, t.div_euclid(86_400_000));
        self
    }
}

/// Appends the decimal digits of `v` (`itoa`: two digits per step from a table).
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// The proleptic Gregorian date of a day number (days since 1970-01-01; Howard Hinnant's
/// `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Appends `yyyy-MM-dd` of a day number.
pub fn push_day(out: &mut Vec<u8>, day: i64) {
    let (y, m, d) = civil_from_days(day);
    let _ = write!(out, "{y:04}-{m:02}-{d:02}");
}

/// Appends `HH:mm` of a minute of the day (0..1440).
pub fn push_minute(out: &mut Vec<u8>, minute_of_day: i64) {
    let (h, m) = (minute_of_day / 60, minute_of_day % 60);
    out.extend_from_slice(&[
        b'0' + (h / 10) as u8,
        b'0' + (h % 10) as u8,
        b':',
        b'0' + (m / 10) as u8,
        b'0' + (m % 10) as u8,
    ]);
}

/// Prints rows on stdout: each subtask fills its own buffer and writes it whole (under
/// stdout's lock) when it passes 256 KiB and at the end of its input.
pub struct StdoutSink<T> {
    pub format: Format<T>,
}

/// One subtask's buffer of [`StdoutSink`].
pub struct StdoutWriter<T> {
    format: Format<T>,
    buffer: Vec<u8>,
}

const FLUSH_AT: usize = 256 * 1024;

impl<T> StdoutWriter<T> {
    fn flush(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        out.write_all(&self.buffer)
            .and_then(|()| out.flush())
            .map_err(|e| typeinfo_runtime::Error::function(format!("stdout: {e}")))?;
        self.buffer.clear();
        Ok(())
    }
}

impl<T: Data + Send> SinkWriter<T> for StdoutWriter<T> {
    type Committable = u8;

    #[inline]
    fn write(&mut self, row: T, _ctx: &SinkContext) -> Result<()> {
        (self.format)(&row, &mut self.buffer);
        self.buffer.push(b'\n');
        if self.buffer.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    fn prepare_commit(&mut self, _checkpoint: u64) -> Result<Vec<u8>> {
        self.flush()?;
        Ok(Vec::new())
    }
}

impl<T: Data + Send> Sink<T> for StdoutSink<T> {
    type Writer = StdoutWriter<T>;
    type Committable = u8;

    fn writer(&self, _ctx: &RuntimeContext) -> Result<StdoutWriter<T>> {
        Ok(StdoutWriter {
            format: Arc::clone(&self.format),
            buffer: Vec::with_capacity(FLUSH_AT + 4096),
        })
    }

    fn commit(&self, _committable: u8) -> Result<()> {
        Ok(())
    }
}

/// Counts rows (the generator mode's sink: Nexmark's blackhole).
#[derive(Debug, Clone, Default)]
pub struct CountSink {
    pub rows: Arc<AtomicU64>,
}

/// One subtask's count of [`CountSink`].
pub struct CountWriter {
    rows: Arc<AtomicU64>,
    count: u64,
}

impl<T: Data> SinkWriter<T> for CountWriter {
    type Committable = u8;

    #[inline]
    fn write(&mut self, _row: T, _ctx: &SinkContext) -> Result<()> {
        self.count += 1;
        Ok(())
    }

    fn prepare_commit(&mut self, _checkpoint: u64) -> Result<Vec<u8>> {
        self.rows
            .fetch_add(std::mem::take(&mut self.count), Ordering::Relaxed);
        Ok(Vec::new())
    }
}

impl<T: Data> Sink<T> for CountSink {
    type Writer = CountWriter;
    type Committable = u8;

    fn writer(&self, _ctx: &RuntimeContext) -> Result<CountWriter> {
        Ok(CountWriter {
            rows: Arc::clone(&self.rows),
            count: 0,
        })
    }

    fn commit(&self, _committable: u8) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_integers_and_decimals_at_their_limits() {
        let mut out = Vec::new();
        Fields::new(&mut out)
            .u(0)
            .u(u64::MAX)
            .i(i64::MIN)
            .i(-7)
            .i(i64::MAX)
            .milli(0)
            .milli(u128::from(u64::MAX))
            .milli(u128::from(u64::MAX) + 1)
            .eur(i64::MAX as u64);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "0,18446744073709551615,-9223372036854775808,-7,9223372036854775807,0.000,\
             18446744073709551.615,18446744073709551.616,8374821809464136432.756"
        );
    }

    #[test]
    fn formats_decimals_days_and_minutes() {
        let mut out = Vec::new();
        Fields::new(&mut out)
            .eur(100)
            .eur(73_134_520)
            .day(1_704_067_199_999)
            .day(1_704_067_200_000);
        push_minute(&mut out, 23 * 60 + 59);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "90.800,66406144.160,2023-12-31,2024-01-0123:59"
        );
    }
}
