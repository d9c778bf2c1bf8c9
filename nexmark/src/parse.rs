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
}

fn bit(mask: u8, i: u8) -> bool {
    mask & (1 << i) != 0
}

/// Parses one event line (without its `\n`); `seq` is its 0-based line number. Returns
/// the event's time and the event, unless `keep` leaves out its kind.
///
/// # Errors
///
/// What is wrong with the line, without its place (the reader adds file and line).
pub fn event(line: &[u8], seq: u64, keep: Projection) -> Result<(i64, Option<Event>), String> {
    if line.is_empty() {
        return Err("empty line".into());
    }
    let line = std::str::from_utf8(line).map_err(|e| format!("not valid UTF-8: {e}"))?;
    let line: Line<'_> = serde_json::from_str(line).map_err(|e| format!("invalid event: {e}"))?;
    let (p_keep, a_keep, b_keep) = (
        keep.person.unwrap_or(0),
        keep.auction.unwrap_or(0),
        keep.bid.unwrap_or(0),
    );
    let event = match (line.event_type, line.person, line.auction, line.bid) {
        (0, Some(p), None, None) => Event::Person(Person {
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
        (1, None, Some(a), None) => Event::Auction(Auction {
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
        (2, None, None, Some(b)) => Event::Bid(Bid {
            auction: int("bid.auction", b.auction)?,
            bidder: int("bid.bidder", b.bidder)?,
            price: int("bid.price", b.price)?,
            channel: text("bid.channel", b.channel, bit(b_keep, 0))?,
            url: text("bid.url", b.url, bit(b_keep, 1))?,
            date_time: time("bid.date_time", b.date_time)?,
            extra: text("bid.extra", b.extra, bit(b_keep, 2))?,
            seq,
        }),
        (t, p, a, b) => {
            let keys = [p.is_some(), a.is_some(), b.is_some()];
            match keys.iter().filter(|k| **k).count() {
                1 => {
                    return Err(format!(
                        "event_type {t} does not match the key {}",
                        if keys[0] {
                            "person"
                        } else if keys[1] {
                            "auction"
                        } else {
                            "bid"
                        }
                    ))
                }
                _ => return Err("expected exactly one of the keys person, auction, bid".into()),
            }
        }
    };
    let wanted = match &event {
        Event::Person(_) => keep.person.is_some(),
        Event::Auction(_) => keep.auction.is_some(),
        Event::Bid(_) => keep.bid.is_some(),
    };
    Ok((event.date_time(), wanted.then_some(event)))
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
    use super::*;

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
