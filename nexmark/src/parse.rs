//! Event lines (FORMAT.md) and side-input lines, parsed and checked as the Python reference
//! checks them: one JSON object with `event_type` and exactly the matching one of `person`,
//! `auction`, `bid`; every field present and none unknown; integers in `0 .. 2^63-1`;
//! strings without `,`, `"`, CR or LF (the unquoted CSV could not print them). The check
//! that `date_time` never decreases belongs to the reader (it needs the previous line).

use std::borrow::Cow;

use serde::Deserialize;

use crate::model::{Auction, Bid, Event, Person, SideRow};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    event_type: u8,
    #[serde(borrow)]
    person: Option<RawPerson<'a>>,
    #[serde(borrow)]
    auction: Option<RawAuction<'a>>,
    #[serde(borrow)]
    bid: Option<RawBid<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPerson<'a> {
    id: u64,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    email_address: Cow<'a, str>,
    #[serde(borrow)]
    credit_card: Cow<'a, str>,
    #[serde(borrow)]
    city: Cow<'a, str>,
    #[serde(borrow)]
    state: Cow<'a, str>,
    date_time: u64,
    #[serde(borrow)]
    extra: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuction<'a> {
    id: u64,
    #[serde(borrow)]
    item_name: Cow<'a, str>,
    #[serde(borrow)]
    description: Cow<'a, str>,
    initial_bid: u64,
    reserve: u64,
    date_time: u64,
    expires: u64,
    seller: u64,
    category: u64,
    #[serde(borrow)]
    extra: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBid<'a> {
    auction: u64,
    bidder: u64,
    price: u64,
    #[serde(borrow)]
    channel: Cow<'a, str>,
    #[serde(borrow)]
    url: Cow<'a, str>,
    date_time: u64,
    #[serde(borrow)]
    extra: Cow<'a, str>,
}

/// An integer field: at most `i64::MAX`.
fn int(name: &str, v: u64) -> Result<u64, String> {
    if v > i64::MAX as u64 {
        return Err(format!("{name} out of range 0 .. 2^63-1: {v}"));
    }
    Ok(v)
}

/// A time field as `i64`.
fn time(name: &str, v: u64) -> Result<i64, String> {
    i64::try_from(v).map_err(|_| format!("{name} out of range 0 .. 2^63-1: {v}"))
}

/// A string field the CSV output can print unquoted; kept only when the query reads it
/// (`keep`), else checked and replaced by the empty string (no allocation).
fn text(name: &str, s: Cow<'_, str>, keep: bool) -> Result<String, String> {
    let bad = match &s {
        // A string read straight from the line had no escapes, so it cannot hold a double
        // quote or a control character (JSON refuses them raw): only a comma is possible.
        Cow::Borrowed(b) => memchr::memchr(b',', b.as_bytes()).is_some(),
        Cow::Owned(o) => o.bytes().any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n')),
    };
    if bad {
        return Err(format!(
            "{name} contains a comma, double quote or line break"
        ));
    }
    Ok(if keep { s.into_owned() } else { String::new() })
}

/// Which parts of the events a query reads: the kinds of events it takes, and the string
/// fields it keeps of each (bits in field order). The reader still parses and checks every
/// line whole; strings a query does not read become empty, events of kinds it does not read
/// are not emitted (projection and filter pushdown, as Flink's planner does into sources).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Projection {
    /// Person strings: name, email_address, credit_card, city, state, extra; `None`: no persons.
    pub person: Option<u8>,
    /// Auction strings: item_name, description, extra; `None`: no auctions.
    pub auction: Option<u8>,
    /// Bid strings: channel, url, extra; `None`: no bids.
    pub bid: Option<u8>,
}

impl Projection {
    /// Everything.
    pub const ALL: Projection = Projection {
        person: Some(0xff),
        auction: Some(0xff),
        bid: Some(0xff),
    };

    /// The string masks of persons, auctions and bids (0 for a kind not read).
    fn masks(self) -> (u8, u8, u8) {
        (
            self.person.unwrap_or(0),
            self.auction.unwrap_or(0),
            self.bid.unwrap_or(0),
        )
    }
}

fn bit(mask: u8, i: u8) -> bool {
    mask & (1 << i) != 0
}

/// Parses one event line (without its `\n`); `seq` is its 0-based line number. Returns
/// the event's time and the event, unless `keep` leaves out its kind.
///
/// A line in the generator's own shape (keys in its order, no whitespace, strings without
/// escapes) is read by a scan of that shape ([`scan`]) that borrows its strings; any other
/// line goes through `serde_json`, which accepts every valid spelling of the same event
/// and says what is wrong with an invalid one. Both build the event through the same checks.
///
/// # Errors
///
/// What is wrong with the line, without its place (the reader adds file and line).
pub fn event(line: &[u8], seq: u64, keep: Projection) -> Result<(i64, Option<Event>), String> {
    read(line, seq, keep, true)
}

/// [`event`]; `scan`: a line in the generator's shape is read by the scan.
fn read(
    line: &[u8],
    seq: u64,
    keep: Projection,
    scan: bool,
) -> Result<(i64, Option<Event>), String> {
    if line.is_empty() {
        return Err("empty line".into());
    }
    let raw = match scan.then(|| scan::line(line, keep)).flatten() {
        Some(raw) => raw,
        None => {
            let line = std::str::from_utf8(line).map_err(|e| format!("not valid UTF-8: {e}"))?;
            let line: Line<'_> =
                serde_json::from_str(line).map_err(|e| format!("invalid event: {e}"))?;
            match (line.event_type, line.person, line.auction, line.bid) {
                (0, Some(p), None, None) => Raw::Person(p),
                (1, None, Some(a), None) => Raw::Auction(a),
                (2, None, None, Some(b)) => Raw::Bid(b),
                (t, p, a, b) => return Err(mismatch(t, [p.is_some(), a.is_some(), b.is_some()])),
            }
        }
    };
    let wanted = match &raw {
        Raw::Person(_) => keep.person.is_some(),
        Raw::Auction(_) => keep.auction.is_some(),
        Raw::Bid(_) => keep.bid.is_some(),
    };
    let event = build(raw, seq, keep)?;
    Ok((event.date_time(), wanted.then_some(event)))
}

/// An event line's one event, its strings borrowed from the line where they had no escapes.
enum Raw<'a> {
    Person(RawPerson<'a>),
    Auction(RawAuction<'a>),
    Bid(RawBid<'a>),
}

/// The error of a line whose `event_type` and keys do not agree.
fn mismatch(t: u8, keys: [bool; 3]) -> String {
    match keys.iter().filter(|k| **k).count() {
        1 => format!(
            "event_type {t} does not match the key {}",
            if keys[0] {
                "person"
            } else if keys[1] {
                "auction"
            } else {
                "bid"
            }
        ),
        _ => "expected exactly one of the keys person, auction, bid".into(),
    }
}

/// The event, every field checked.
fn build(raw: Raw<'_>, seq: u64, keep: Projection) -> Result<Event, String> {
    let (p_keep, a_keep, b_keep) = keep.masks();
    Ok(match raw {
        Raw::Person(p) => Event::Person(Person {
            id: int("person.id", p.id)?,
            name: text("person.name", p.name, bit(p_keep, 0))?,
            email_address: text("person.email_address", p.email_address, bit(p_keep, 1))?,
            credit_card: text("person.credit_card", p.credit_card, bit(p_keep, 2))?,
            city: text("person.city", p.city, bit(p_keep, 3))?,
            state: text("person.state", p.state, bit(p_keep, 4))?,
            date_time: time("person.date_time", p.date_time)?,
            extra: text("person.extra", p.extra, bit(p_keep, 5))?,
            seq,
        }),
        Raw::Auction(a) => Event::Auction(Auction {
            id: int("auction.id", a.id)?,
            item_name: text("auction.item_name", a.item_name, bit(a_keep, 0))?,
            description: text("auction.description", a.description, bit(a_keep, 1))?,
            initial_bid: int("auction.initial_bid", a.initial_bid)?,
            reserve: int("auction.reserve", a.reserve)?,
            date_time: time("auction.date_time", a.date_time)?,
            expires: time("auction.expires", a.expires)?,
            seller: int("auction.seller", a.seller)?,
            category: int("auction.category", a.category)?,
            extra: text("auction.extra", a.extra, bit(a_keep, 2))?,
            seq,
        }),
        Raw::Bid(b) => Event::Bid(Bid {
            auction: int("bid.auction", b.auction)?,
            bidder: int("bid.bidder", b.bidder)?,
            price: int("bid.price", b.price)?,
            channel: text("bid.channel", b.channel, bit(b_keep, 0))?,
            url: text("bid.url", b.url, bit(b_keep, 1))?,
            date_time: time("bid.date_time", b.date_time)?,
            extra: text("bid.extra", b.extra, bit(b_keep, 2))?,
            seq,
        }),
    })
}

/// The generator's own spelling of an event line, read by a scan of that exact shape:
/// `{"event_type":N,"<kind>":{...}}` with the kind's keys in FORMAT.md's order, no
/// whitespace, integers as plain digits (no sign, no leading zero, no fraction or
/// exponent, within `u64`), strings without a backslash or a control character. A line in
/// that shape is valid JSON and means what `serde_json` would read from it; the scan gives
/// up (`None`) at the first byte that leaves the shape, and the caller reads the line with
/// `serde_json` instead.
///
/// The scan reads bytes: it takes only lines of printable ASCII (one pass over the line, which
/// also refuses control characters), so it needs no UTF-8 check of the whole line; a string
/// the query keeps becomes a `str` (its own check, of its few bytes), one it does not keep is
/// only checked for a comma (the check [`text`](super::text) makes) and becomes empty, as
/// `build` would make it. A string with a comma, or a line with any other byte, goes to
/// `serde_json`, whose path says what is wrong in its own words.
mod scan {
    use std::borrow::Cow;

    use super::{bit, Projection, Raw, RawAuction, RawBid, RawPerson};

    struct Cursor<'a> {
        line: &'a [u8],
        at: usize,
    }

    impl<'a> Cursor<'a> {
        /// The literal `expected` (inlined with it, so the comparison is a few constant-length
        /// loads instead of a call).
        #[inline(always)]
        fn lit(&mut self, expected: &str) -> Option<()> {
            let rest = self.line.get(self.at..)?;
            rest.starts_with(expected.as_bytes()).then(|| {
                self.at += expected.len();
            })
        }

        /// `prefix` (`,"key":`), then an integer: 1 to 20 digits, no leading zero.
        #[inline(always)]
        fn int(&mut self, prefix: &str) -> Option<u64> {
            self.lit(prefix)?;
            let rest = &self.line[self.at..];
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 || (digits > 1 && rest[0] == b'0') {
                return None;
            }
            let value = if digits <= 19 {
                // 19 digits stay below 10^19 < 2^64: no overflow to check.
                rest[..digits]
                    .iter()
                    .fold(0u64, |v, d| v * 10 + u64::from(d - b'0'))
            } else {
                rest[..digits].iter().try_fold(0u64, |v, d| {
                    v.checked_mul(10)?.checked_add(u64::from(d - b'0'))
                })?
            };
            self.at += digits;
            Some(value)
        }

        /// `prefix` (`,"key":"`), then the rest of a string without escapes or control
        /// characters: the string when `keep`, else an empty one (when it has no comma).
        #[inline(always)]
        fn string(&mut self, prefix: &str, keep: bool) -> Option<Cow<'a, str>> {
            self.lit(prefix)?;
            let rest = &self.line[self.at..];
            // The line is printable ASCII (checked once in `line`).
            let len = memchr::memchr2(b'"', b'\\', rest)?;
            if rest[len] != b'"' {
                return None;
            }
            let bytes = &rest[..len];
            self.at += len + 1;
            if keep {
                std::str::from_utf8(bytes).ok().map(Cow::Borrowed)
            } else if memchr::memchr(b',', bytes).is_some() {
                None
            } else {
                Some(Cow::Borrowed(""))
            }
        }
    }

    /// The line's event, or `None` when the line is not in the generator's shape.
    pub(super) fn line(line: &[u8], keep: Projection) -> Option<Raw<'_>> {
        // Printable ASCII only: no control character (JSON allows none raw in a string, and
        // the shape has no whitespace) and nothing that needs a UTF-8 check; one pass the
        // compiler vectorizes, instead of one per string.
        if line
            .iter()
            .fold(false, |any, &b| any | !(0x20..0x80).contains(&b))
        {
            return None;
        }
        let (p, a, b) = keep.masks();
        let mut c = Cursor { line, at: 0 };
        let kind = c.int("{\"event_type\":")?;
        let raw = match kind {
            0 => Raw::Person(RawPerson {
                id: c.int(",\"person\":{\"id\":")?,
                name: c.string(",\"name\":\"", bit(p, 0))?,
                email_address: c.string(",\"email_address\":\"", bit(p, 1))?,
                credit_card: c.string(",\"credit_card\":\"", bit(p, 2))?,
                city: c.string(",\"city\":\"", bit(p, 3))?,
                state: c.string(",\"state\":\"", bit(p, 4))?,
                date_time: c.int(",\"date_time\":")?,
                extra: c.string(",\"extra\":\"", bit(p, 5))?,
            }),
            1 => Raw::Auction(RawAuction {
                id: c.int(",\"auction\":{\"id\":")?,
                item_name: c.string(",\"item_name\":\"", bit(a, 0))?,
                description: c.string(",\"description\":\"", bit(a, 1))?,
                initial_bid: c.int(",\"initial_bid\":")?,
                reserve: c.int(",\"reserve\":")?,
                date_time: c.int(",\"date_time\":")?,
                expires: c.int(",\"expires\":")?,
                seller: c.int(",\"seller\":")?,
                category: c.int(",\"category\":")?,
                extra: c.string(",\"extra\":\"", bit(a, 2))?,
            }),
            2 => Raw::Bid(RawBid {
                auction: c.int(",\"bid\":{\"auction\":")?,
                bidder: c.int(",\"bidder\":")?,
                price: c.int(",\"price\":")?,
                channel: c.string(",\"channel\":\"", bit(b, 0))?,
                url: c.string(",\"url\":\"", bit(b, 1))?,
                date_time: c.int(",\"date_time\":")?,
                extra: c.string(",\"extra\":\"", bit(b, 2))?,
            }),
            _ => return None,
        };
        c.lit("}}")?;
        (c.at == line.len()).then_some(raw)
    }
}

/// Parses one side-input line `key,value` (the value is the rest of the line).
///
/// # Errors
///
/// What is wrong with the line.
pub fn side_row(line: &str) -> Result<SideRow, String> {
    let mut parts = line.split(',');
    let (Some(key), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("expected `key,value`, got {line:?}"));
    };
    let key = key
        .parse::<i64>()
        .map_err(|_| format!("key is not an integer: {key:?}"))?;
    if value.contains(['"', '\r', '\n']) {
        return Err("value contains a double quote or a line break".into());
    }
    Ok(SideRow {
        key,
        value: value.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A string field: mostly plain, sometimes with what JSON escapes or the CSV refuses.
    fn field() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-z ]{0,12}",
            1 => "[a-z,\"\\\\\u{1}\u{e9}\n]{0,6}",
        ]
    }

    /// An event line as the generator writes it (serde_json, fields in FORMAT.md's order).
    fn line() -> impl Strategy<Value = String> {
        let int = prop_oneof![
            0..2_000_000_000_000u64,
            Just(u64::MAX),
            Just(i64::MAX as u64 + 1)
        ];
        let person = (int.clone(), field(), field(), int.clone()).prop_map(|(id, name, extra, t)| {
            format!(
                r#"{{"event_type":0,"person":{{"id":{id},"name":{},"email_address":"e@x.com","credit_card":"1 2","city":"c","state":"s","date_time":{t},"extra":{}}}}}"#,
                serde_json::to_string(&name).unwrap(),
                serde_json::to_string(&extra).unwrap()
            )
        });
        let auction = (int.clone(), field(), int.clone()).prop_map(|(id, item, t)| {
            format!(
                r#"{{"event_type":1,"auction":{{"id":{id},"item_name":{},"description":"d","initial_bid":5,"reserve":6,"date_time":{t},"expires":{t},"seller":7,"category":10,"extra":"x"}}}}"#,
                serde_json::to_string(&item).unwrap()
            )
        });
        let bid = (int.clone(), int, field()).prop_map(|(a, t, url)| {
            format!(
                r#"{{"event_type":2,"bid":{{"auction":{a},"bidder":3,"price":100,"channel":"Google","url":{},"date_time":{t},"extra":""}}}}"#,
                serde_json::to_string(&url).unwrap()
            )
        });
        prop_oneof![person, auction, bid]
    }

    /// A line with one byte inserted, removed or replaced somewhere (also bytes that are not
    /// ASCII, which may leave the line without valid UTF-8).
    fn damaged() -> impl Strategy<Value = Vec<u8>> {
        (
            line(),
            any::<prop::sample::Index>(),
            0..3u8,
            prop::sample::select(b" ,:{}\"0912a-\\e.\x7f\x80\xc3\xa9\xff".to_vec()),
        )
            .prop_map(|(line, at, how, byte)| {
                let mut bytes = line.into_bytes();
                let i = at.index(bytes.len());
                match how {
                    0 => bytes.insert(i, byte),
                    1 => {
                        bytes.remove(i);
                    }
                    _ => bytes[i] = byte,
                }
                bytes
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// The scan reads what serde_json reads, accepts nothing serde_json refuses, and
        /// refuses with serde_json's words.
        #[test]
        fn the_scan_and_serde_json_agree(
            line in prop_oneof![line().prop_map(String::into_bytes), damaged()],
            person in prop::option::of(0..64u8),
            auction in prop::option::of(0..8u8),
            bid in prop::option::of(0..8u8),
        ) {
            for keep in [Projection::ALL, Projection { person, auction, bid }] {
                prop_assert_eq!(
                    read(&line, 7, keep, true),
                    read(&line, 7, keep, false),
                    "{}",
                    String::from_utf8_lossy(&line)
                );
            }
        }
    }

    #[test]
    fn the_generators_lines_take_the_scan() {
        let line = r#"{"event_type":2,"bid":{"auction":1000,"bidder":1001,"price":100,"channel":"Google","url":"u","date_time":5,"extra":"x"}}"#;
        assert!(scan::line(line.as_bytes(), Projection::ALL).is_some());
        for not_the_shape in [
            r#"{"event_type":2, "bid":{"auction":1000,"bidder":1001,"price":100,"channel":"Google","url":"u","date_time":5,"extra":"x"}}"#,
            r#"{"event_type":2,"bid":{"bidder":1001,"auction":1000,"price":100,"channel":"Google","url":"u","date_time":5,"extra":"x"}}"#,
            r#"{"event_type":2,"bid":{"auction":01000,"bidder":1001,"price":100,"channel":"Google","url":"u","date_time":5,"extra":"x"}}"#,
            r#"{"event_type":2,"bid":{"auction":1000,"bidder":1001,"price":100,"channel":"Goo\u0067le","url":"u","date_time":5,"extra":"x"}}"#,
            r#"{,"event_type":2,"bid":{"auction":1000,"bidder":1001,"price":100,"channel":"Google","url":"u","date_time":5,"extra":"x"}}"#,
        ] {
            assert!(
                scan::line(not_the_shape.as_bytes(), Projection::ALL).is_none(),
                "{not_the_shape}"
            );
        }
    }

    #[test]
    fn parses_a_bid_and_refuses_bad_lines() {
        let line = br#"{"event_type":2,"bid":{"auction":1000,"bidder":1001,"price":100,"channel":"Google","url":"u","date_time":5,"extra":"x"}}"#;
        assert!(
            matches!(event(line, 3, Projection::ALL), Ok((5, Some(Event::Bid(b)))) if b.price == 100 && b.seq == 3 && b.extra == "x")
        );
        let only_bid_prices = Projection {
            person: None,
            auction: None,
            bid: Some(0),
        };
        assert!(
            matches!(event(line, 3, only_bid_prices), Ok((5, Some(Event::Bid(b)))) if b.extra.is_empty())
        );
        let no_bids = Projection {
            person: Some(0),
            auction: None,
            bid: None,
        };
        assert!(matches!(event(line, 3, no_bids), Ok((5, None))));
        assert!(event(b"", 0, Projection::ALL).is_err());
        assert!(event(b"{\"event_type\":2", 0, Projection::ALL).is_err());
        assert!(event(br#"{"event_type":1,"bid":{"auction":1,"bidder":1,"price":1,"channel":"a","url":"u","date_time":5,"extra":"x"}}"#, 0, Projection::ALL).is_err());
        assert!(event(br#"{"event_type":2,"bid":{"auction":1,"bidder":1,"price":1,"channel":"a,b","url":"u","date_time":5,"extra":"x"}}"#, 0, Projection::ALL).is_err());
    }
}
