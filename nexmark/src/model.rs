//! The three Nexmark record types as stream records, and the event that carries one of them.
//!
//! Every record keeps `seq`, its event number (the 0-based line of the event file, or the
//! generator's event number). Tie-breaks that QUERIES.md defines by file order (q9's full
//! ties, q18's equal `dateTime`, q19's equal prices) compare `seq`, so they hold whatever
//! order records of several source subtasks or exchange channels arrive in.

use typeinfo::TypeInfo;

/// A person (`event_type` 0).
#[derive(TypeInfo, Clone, Debug, PartialEq)]
#[typeinfo(name = "nexmark.Person")]
pub struct Person {
    pub id: u64,
    pub name: String,
    pub email_address: String,
    pub credit_card: String,
    pub city: String,
    pub state: String,
    pub date_time: i64,
    pub extra: String,
    pub seq: u64,
}

/// An auction (`event_type` 1).
#[derive(TypeInfo, Clone, Debug, PartialEq)]
#[typeinfo(name = "nexmark.Auction")]
pub struct Auction {
    pub id: u64,
    pub item_name: String,
    pub description: String,
    pub initial_bid: u64,
    pub reserve: u64,
    pub date_time: i64,
    pub expires: i64,
    pub seller: u64,
    pub category: u64,
    pub extra: String,
    pub seq: u64,
}

/// A bid (`event_type` 2).
#[derive(TypeInfo, Clone, Debug, PartialEq)]
#[typeinfo(name = "nexmark.Bid")]
pub struct Bid {
    pub auction: u64,
    pub bidder: u64,
    pub price: u64,
    pub channel: String,
    pub url: String,
    pub date_time: i64,
    pub extra: String,
    pub seq: u64,
}

/// One line of an event file.
#[derive(TypeInfo, Clone, Debug, PartialEq)]
#[typeinfo(name = "nexmark.Event")]
pub enum Event {
    Person(Person),
    Auction(Auction),
    Bid(Bid),
}

impl Event {
    /// The event time (epoch ms).
    pub fn date_time(&self) -> i64 {
        match self {
            Event::Person(p) => p.date_time,
            Event::Auction(a) => a.date_time,
            Event::Bid(b) => b.date_time,
        }
    }

    pub fn into_person(self) -> Option<Person> {
        match self {
            Event::Person(p) => Some(p),
            _ => None,
        }
    }

    pub fn into_auction(self) -> Option<Auction> {
        match self {
            Event::Auction(a) => Some(a),
            _ => None,
        }
    }

    pub fn into_bid(self) -> Option<Bid> {
        match self {
            Event::Bid(b) => Some(b),
            _ => None,
        }
    }
}

/// A row of q13's side table.
#[derive(TypeInfo, Clone, Debug, PartialEq)]
#[typeinfo(name = "nexmark.SideRow")]
pub struct SideRow {
    pub key: i64,
    pub value: String,
}
