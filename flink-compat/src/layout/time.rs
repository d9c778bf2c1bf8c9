//! Flink's serializers of Java's time types, and the Rust types that hold their values
//! exactly: `InstantSerializer`, `DateSerializer` (`java.util.Date`), `SqlDateSerializer`, `SqlTimeSerializer`,
//! `SqlTimestampSerializer`, `LocalDateSerializer`, `LocalTimeSerializer`,
//! `LocalDateTimeSerializer`.
//!
//! Each writes its own null (a reserved value, same length), so each serializes both the
//! value type and `Option` of it; a non-`Option` read of a null is an error. Reads refuse
//! values no Java object can hold (a month 13, nanoseconds past a second). Writing a value
//! whose bytes are the null's (a `SqlDate` at `i64::MIN` milliseconds) is an error, since it
//! would read back as null.
//!
//! Flink's type extraction gives `Instant`, `java.util.Date` and the `java.sql` types these
//! serializers, but `LocalDate`, `LocalTime` and `LocalDateTime` Kryo (they are not basic
//! types to it): their serializers here are for state declared with Flink's
//! `LocalTimeTypeInfo` (`Types.LOCAL_DATE` ...) or the Table API, and the three types have
//! no [`FlinkType`](crate::FlinkType), so that a POJO field of one does not compile rather
//! than misread Kryo's bytes.
//!
//! Flink's quirk kept here: `SqlTimestampSerializer` writes a null as 12 bytes (`Long.MIN_VALUE`
//! then `0`) but its `deserialize` reads only the first 8 (its `copy` reads 12). These
//! serializers read the 12 bytes that are written.

use typeinfo::{DataInputView, DataOutputView, Error, Result, SerializerSnapshot, TypeSerializer};

use crate::java_io;
use crate::layout::string::null_error;
use crate::snapshot;

/// `java.time.Instant`: seconds since the epoch and the nanoseconds within the second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    /// Seconds since 1970-01-01T00:00:00Z (`getEpochSecond`).
    pub seconds: i64,
    /// Nanoseconds within the second, `0..1_000_000_000` (`getNano`).
    pub nanos: i32,
}

/// `java.util.Date`: milliseconds since the epoch (`getTime`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(pub i64);

/// `java.sql.Date`: milliseconds since the epoch (`getTime`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SqlDate(pub i64);

/// `java.sql.Time`: milliseconds since the epoch (`getTime`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SqlTime(pub i64);

/// `java.sql.Timestamp`: `getTime()` (milliseconds since the epoch, with the
/// milliseconds of `nanos`) and `getNanos()` (nanoseconds within the second).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SqlTimestamp {
    /// `getTime()`.
    pub millis: i64,
    /// `getNanos()`, `0..1_000_000_000`.
    pub nanos: i32,
}

/// `java.time.LocalDate`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalDate {
    /// The proleptic year.
    pub year: i32,
    /// `1..=12`.
    pub month: u8,
    /// `1..=31`, within the month.
    pub day: u8,
}

/// `java.time.LocalTime`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalTime {
    /// `0..=23`.
    pub hour: u8,
    /// `0..=59`.
    pub minute: u8,
    /// `0..=59`.
    pub second: u8,
    /// `0..1_000_000_000`.
    pub nano: i32,
}

/// `java.time.LocalDateTime`: a date and a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalDateTime {
    /// The date.
    pub date: LocalDate,
    /// The time of day.
    pub time: LocalTime,
}

fn out_of_range(what: &str, detail: String) -> Error {
    Error::OutOfRange {
        what: what.to_owned(),
        detail,
    }
}

fn check_nanos(what: &str, nanos: i32) -> Result<i32> {
    if (0..1_000_000_000).contains(&nanos) {
        Ok(nanos)
    } else {
        Err(out_of_range(what, format!("{nanos} nanoseconds")))
    }
}

fn read_instant(input: &mut DataInputView<'_>) -> Result<Option<Instant>> {
    let seconds = java_io::read_i64(input)?;
    let nanos = java_io::read_i32(input)?;
    if seconds == i64::MIN && nanos == i32::MIN {
        return Ok(None);
    }
    let nanos = check_nanos("Instant", nanos)?;
    Ok(Some(Instant { seconds, nanos }))
}

fn write_instant(out: &mut DataOutputView, v: Option<&Instant>) -> Result<()> {
    let (seconds, nanos) = match v {
        None => (i64::MIN, i32::MIN),
        Some(v) => (v.seconds, check_nanos("Instant", v.nanos)?),
    };
    java_io::write_i64(out, seconds);
    java_io::write_i32(out, nanos);
    Ok(())
}

fn read_millis(input: &mut DataInputView<'_>) -> Result<Option<i64>> {
    let millis = java_io::read_i64(input)?;
    Ok((millis != i64::MIN).then_some(millis))
}

fn write_millis(out: &mut DataOutputView, v: Option<i64>, what: &str) -> Result<()> {
    if v == Some(i64::MIN) {
        return Err(out_of_range(
            what,
            "i64::MIN milliseconds is Flink's null".to_owned(),
        ));
    }
    java_io::write_i64(out, v.unwrap_or(i64::MIN));
    Ok(())
}

fn read_date(input: &mut DataInputView<'_>) -> Result<Option<Date>> {
    Ok(read_millis(input)?.map(Date))
}

fn write_date(out: &mut DataOutputView, v: Option<&Date>) -> Result<()> {
    write_millis(out, v.map(|d| d.0), "java.util.Date")
}

fn read_sql_date(input: &mut DataInputView<'_>) -> Result<Option<SqlDate>> {
    Ok(read_millis(input)?.map(SqlDate))
}

fn write_sql_date(out: &mut DataOutputView, v: Option<&SqlDate>) -> Result<()> {
    write_millis(out, v.map(|d| d.0), "java.sql.Date")
}

fn read_sql_time(input: &mut DataInputView<'_>) -> Result<Option<SqlTime>> {
    Ok(read_millis(input)?.map(SqlTime))
}

fn write_sql_time(out: &mut DataOutputView, v: Option<&SqlTime>) -> Result<()> {
    write_millis(out, v.map(|d| d.0), "java.sql.Time")
}

fn read_sql_timestamp(input: &mut DataInputView<'_>) -> Result<Option<SqlTimestamp>> {
    let millis = java_io::read_i64(input)?;
    let nanos = java_io::read_i32(input)?;
    if millis == i64::MIN {
        return Ok(None);
    }
    let nanos = check_nanos("java.sql.Timestamp", nanos)?;
    Ok(Some(SqlTimestamp { millis, nanos }))
}

fn write_sql_timestamp(out: &mut DataOutputView, v: Option<&SqlTimestamp>) -> Result<()> {
    write_millis(out, v.map(|t| t.millis), "java.sql.Timestamp")?;
    let nanos = match v {
        Some(t) => check_nanos("java.sql.Timestamp", t.nanos)?,
        None => 0,
    };
    java_io::write_i32(out, nanos);
    Ok(())
}

fn days_in_month(year: i32, month: u8) -> u8 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn check_date(d: LocalDate) -> Result<LocalDate> {
    if (1..=12).contains(&d.month) && (1..=days_in_month(d.year, d.month)).contains(&d.day) {
        Ok(d)
    } else {
        Err(out_of_range("LocalDate", format!("{d:?} is not a date")))
    }
}

fn read_local_date(input: &mut DataInputView<'_>) -> Result<Option<LocalDate>> {
    let year = java_io::read_i32(input)?;
    let [month, day] = input.read_array::<2>()?;
    if year == i32::MIN {
        return Ok(None);
    }
    check_date(LocalDate { year, month, day }).map(Some)
}

fn write_local_date(out: &mut DataOutputView, v: Option<&LocalDate>) -> Result<()> {
    match v {
        None => {
            java_io::write_i32(out, i32::MIN);
            java_io::write_i16(out, i16::MIN);
        }
        Some(d) => {
            if d.year == i32::MIN {
                return Err(out_of_range(
                    "LocalDate",
                    "year i32::MIN is Flink's null".to_owned(),
                ));
            }
            let d = check_date(*d)?;
            java_io::write_i32(out, d.year);
            out.write_bytes(&[d.month, d.day]);
        }
    }
    Ok(())
}

fn check_time(t: LocalTime) -> Result<LocalTime> {
    if t.hour < 24 && t.minute < 60 && t.second < 60 && (0..1_000_000_000).contains(&t.nano) {
        Ok(t)
    } else {
        Err(out_of_range(
            "LocalTime",
            format!("{t:?} is not a time of day"),
        ))
    }
}

fn read_local_time(input: &mut DataInputView<'_>) -> Result<Option<LocalTime>> {
    let [hour, minute, second] = input.read_array::<3>()?;
    let nano = java_io::read_i32(input)?;
    if hour == 0x80 {
        return Ok(None);
    }
    check_time(LocalTime {
        hour,
        minute,
        second,
        nano,
    })
    .map(Some)
}

fn write_local_time(out: &mut DataOutputView, v: Option<&LocalTime>) -> Result<()> {
    match v {
        None => {
            out.write_u8(0x80);
            java_io::write_i16(out, i16::MIN);
            java_io::write_i32(out, i32::MIN);
        }
        Some(t) => {
            let t = check_time(*t)?;
            out.write_bytes(&[t.hour, t.minute, t.second]);
            java_io::write_i32(out, t.nano);
        }
    }
    Ok(())
}

fn read_local_date_time(input: &mut DataInputView<'_>) -> Result<Option<LocalDateTime>> {
    let date = read_local_date(input)?;
    let time = read_local_time(input)?;
    match (date, time) {
        (Some(date), Some(time)) => Ok(Some(LocalDateTime { date, time })),
        (None, None) => Ok(None),
        _ => Err(out_of_range(
            "LocalDateTime",
            "one of its date and time is null".to_owned(),
        )),
    }
}

fn write_local_date_time(out: &mut DataOutputView, v: Option<&LocalDateTime>) -> Result<()> {
    write_local_date(out, v.map(|v| &v.date))?;
    write_local_time(out, v.map(|v| &v.time))
}

nullable_layout!(
    /// `java.time.Instant` (`InstantSerializer`): `long` seconds, `int` nanoseconds; null is
    /// `Long.MIN_VALUE`, `Integer.MIN_VALUE`.
    InstantSerializer, Instant, Some(12), read_instant, write_instant
);
nullable_layout!(
    /// `java.util.Date` (`DateSerializer`): `long` milliseconds; null is `Long.MIN_VALUE`.
    DateSerializer, Date, Some(8), read_date, write_date
);
nullable_layout!(
    /// `java.sql.Date` (`SqlDateSerializer`): `long` milliseconds; null is `Long.MIN_VALUE`.
    SqlDateSerializer, SqlDate, Some(8), read_sql_date, write_sql_date
);
nullable_layout!(
    /// `java.sql.Time` (`SqlTimeSerializer`): `long` milliseconds; null is `Long.MIN_VALUE`.
    SqlTimeSerializer, SqlTime, Some(8), read_sql_time, write_sql_time
);
nullable_layout!(
    /// `java.sql.Timestamp` (`SqlTimestampSerializer`): `long` `getTime()`, `int`
    /// `getNanos()`; null is `Long.MIN_VALUE`, `0`.
    SqlTimestampSerializer, SqlTimestamp, Some(12), read_sql_timestamp, write_sql_timestamp
);
nullable_layout!(
    /// `java.time.LocalDate` (`LocalDateSerializer`): `int` year, `byte` month, `byte` day;
    /// null is `Integer.MIN_VALUE`, `Short.MIN_VALUE`.
    LocalDateSerializer, LocalDate, Some(6), read_local_date, write_local_date
);
nullable_layout!(
    /// `java.time.LocalTime` (`LocalTimeSerializer`): `byte` hour, minute, second, `int`
    /// nanoseconds; null is `Byte.MIN_VALUE`, `Short.MIN_VALUE`, `Integer.MIN_VALUE`.
    LocalTimeSerializer, LocalTime, Some(7), read_local_time, write_local_time
);
nullable_layout!(
    /// `java.time.LocalDateTime` (`LocalDateTimeSerializer`): the date's layout, then the
    /// time's; null is both nulls.
    LocalDateTimeSerializer, LocalDateTime, Some(13), read_local_date_time, write_local_date_time
);
