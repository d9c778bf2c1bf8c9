"""Unit tests of reference.py (the Nexmark reference implementation).

Run from the repository root:

    python3 -m unittest runtime/tests/nexmark/test_reference.py

Every expected output below was worked out by hand from QUERIES.md (the
comments show the reasoning), not produced by running reference.py. Times are
written as offsets from B = 2024-01-01T00:00:00Z, a multiple of 10000 ms, so
window bounds are easy to read.
"""

import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "reference.py")

# Import reference.py under a unique name (runtime/tests/windowed has another
# reference.py).
_spec = importlib.util.spec_from_file_location("nexmark_reference", REF)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

B = 1704067200000  # 2024-01-01T00:00:00.000Z
DAY = 86_400_000
HOUR = 3_600_000
URL = "https://www.nexmark.com/a/b/c/item.htm?query=1&channel_id=1"


# ---------------------------------------------------------------------------
# Event builders (field order of FORMAT.md)
# ---------------------------------------------------------------------------

def person(id, t, name="ann lee", city="boise", state="id", extra="px"):
    return {"event_type": 0, "person": {
        "id": id, "name": name, "email_address": "ab@cd.com",
        "credit_card": "1111 2222 3333 4444", "city": city, "state": state,
        "date_time": t, "extra": extra}}


def auction(id, t, seller=1000, category=10, expires=None, extra="ax",
            initial_bid=100, reserve=200):
    return {"event_type": 1, "auction": {
        "id": id, "item_name": "item%d" % id, "description": "desc%d" % id,
        "initial_bid": initial_bid, "reserve": reserve, "date_time": t,
        "expires": t + 100 if expires is None else expires,
        "seller": seller, "category": category, "extra": extra}}


def bid(auction, bidder, price, t, channel="channel-1", url=URL, extra="bx"):
    return {"event_type": 2, "bid": {
        "auction": auction, "bidder": bidder, "price": price,
        "channel": channel, "url": url, "date_time": t, "extra": extra}}


def jsonl(events):
    return "".join(json.dumps(e, separators=(",", ":")) + "\n"
                   for e in events)


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.nfiles = 0

    def write(self, content, binary=False):
        self.nfiles += 1
        path = os.path.join(self.tmp.name, "f%d" % self.nfiles)
        with open(path, "wb" if binary else "w",
                  **({} if binary else {"encoding": "utf-8"})) as f:
            f.write(content)
        return path

    def run_query(self, query, events, side=None):
        path = self.write(jsonl(events))
        side_path = None if side is None else self.write(side)
        return ref.run_query(query, path, side_path)

    def check(self, query, events, expected, side=None):
        """The query's rows must equal `expected` as a multiset; the
        reference returns them sorted."""
        got = self.run_query(query, events, side)
        self.assertEqual(got, sorted(got), "output is not sorted")
        self.assertEqual(got, sorted(expected))

    def cli(self, *args):
        return subprocess.run([sys.executable, REF, *args],
                              capture_output=True, text=True)


# ---------------------------------------------------------------------------
# Stateless queries
# ---------------------------------------------------------------------------

class StatelessQueries(Base):
    def test_q0_pass_through_keeps_duplicates(self):
        events = [
            person(1000, B),
            bid(1000, 2000, 5, B + 1, extra="e1"),
            auction(1000, B + 2),
            bid(1001, 2001, 7, B + 3, extra="e2"),
            bid(1001, 2001, 7, B + 3, extra="e2"),  # identical bid: 2 rows
        ]
        self.check("q0", events, [
            "1000,2000,5,%d,e1" % (B + 1),
            "1001,2001,7,%d,e2" % (B + 3),
            "1001,2001,7,%d,e2" % (B + 3),
        ])

    def test_q1_decimal_formatting(self):
        # v = price * 908 thousandths
        cases = [(100, "90.800"), (73134520, "66406144.160"), (1, "0.908"),
                 (0, "0.000"), (1000, "908.000"), (12345, "11209.260"),
                 (99995280, "90795714.240"), (11, "9.988")]
        events = [bid(7, 8, p, B + i, extra="x%d" % i)
                  for i, (p, _) in enumerate(cases)]
        self.check("q1", events, [
            "7,8,%s,%d,x%d" % (eur, B + i, i)
            for i, (_, eur) in enumerate(cases)])

    def test_q2_selection(self):
        events = [bid(1107, 1, 5, B),   # 123 * 9
                  bid(1230, 1, 6, B),   # 123 * 10
                  bid(1000, 1, 7, B),
                  bid(1108, 1, 8, B)]
        self.check("q2", events, ["1107,5", "1230,6"])

    def test_q14_filter_hour_classes_and_c_count(self):
        # price filter: 1000000000 < price*908 < 50000000000
        #   1101321*908 = 999999468 (out), 1101322*908 = 1000000376 (in),
        #   55066079*908 = 49999999732 (in), 55066080*908 = 50000000640 (out)
        # 2000000 * 908 = 1816000000 -> 1816000.000
        events = [
            bid(11, 11, 2000000, B - 1, extra="q"),           # 23h prev day
            bid(1, 1, 1101321, B, extra="ccc"),                # filtered out
            bid(2, 2, 1101322, B, extra="abcabc"),             # h 0
            bid(3, 3, 2000000, B + 7 * HOUR - 1, extra="xyz"),  # h 6
            bid(4, 4, 2000000, B + 7 * HOUR, extra="C"),       # h 7
            bid(5, 5, 2000000, B + 8 * HOUR, extra="cc"),      # h 8
            bid(6, 6, 2000000, B + 19 * HOUR - 1, extra="c"),  # h 18
            bid(7, 7, 55066079, B + 19 * HOUR, extra="x"),     # h 19
            bid(8, 8, 55066080, B + 19 * HOUR, extra="c"),     # filtered out
            bid(9, 9, 2000000, B + 20 * HOUR, extra="acbc"),   # h 20
            bid(10, 10, 2000000, B + DAY - 1, extra="c c"),    # h 23
        ]
        self.check("q14", events, [
            "11,11,1816000.000,nightTime,%d,q,0" % (B - 1),
            "2,2,1000000.376,nightTime,%d,abcabc,2" % B,
            "3,3,1816000.000,nightTime,%d,xyz,0" % (B + 7 * HOUR - 1),
            "4,4,1816000.000,otherTime,%d,C,0" % (B + 7 * HOUR),
            "5,5,1816000.000,dayTime,%d,cc,2" % (B + 8 * HOUR),
            "6,6,1816000.000,dayTime,%d,c,1" % (B + 19 * HOUR - 1),
            "7,7,49999999.732,otherTime,%d,x,0" % (B + 19 * HOUR),
            "9,9,1816000.000,nightTime,%d,acbc,2" % (B + 20 * HOUR),
            "10,10,1816000.000,nightTime,%d,c c,2" % (B + DAY - 1),
        ])

    def test_q21_channel_id(self):
        base = "https://www.nexmark.com/a/b/c/item.htm"
        events = [
            bid(1, 1, 1, B, "Apple", base + "?query=1"),
            bid(2, 2, 2, B, "GOOGLE", base + "?query=1&channel_id=77"),
            bid(3, 3, 3, B, "facebook", base + "?query=1"),
            bid(4, 4, 4, B, "Baidu", base + "?query=1"),
            # after '&'
            bid(5, 5, 5, B, "channel-5", base + "?query=1&channel_id=123"),
            # at the start of the url
            bid(6, 6, 6, B, "channel-6", "channel_id=456&query=1"),
            # absent: dropped
            bid(7, 7, 7, B, "channel-7", base + "?query=1"),
            # after '?' (neither '&' nor start): dropped
            bid(8, 8, 8, B, "channel-8", base + "?channel_id=9"),
            # xchannel_id does not count; the first valid occurrence wins
            bid(9, 9, 9, B, "channel-9",
                base + "?query=1&xchannel_id=5&channel_id=42&channel_id=43"),
            # empty value: matches, channel_id = '' (not NULL), kept
            bid(10, 10, 10, B, "channel-10", base + "?query=1&channel_id="),
            # not exactly one of the four names, no channel_id: dropped
            bid(11, 11, 11, B, "Applesauce", base + "?query=1"),
            # value stops at the next '&'
            bid(12, 12, 12, B, "channel-12",
                base + "?query=1&channel_id=7&x=1"),
        ]
        self.check("q21", events, [
            "1,1,1,Apple,0", "2,2,2,GOOGLE,1", "3,3,3,facebook,2",
            "4,4,4,Baidu,3", "5,5,5,channel-5,123", "6,6,6,channel-6,456",
            "9,9,9,channel-9,42", "10,10,10,channel-10,",
            "12,12,12,channel-12,7",
        ])

    def test_q22_url_directories(self):
        events = [
            bid(1, 1, 1, B, url="https://www.nexmark.com/rswp/bsu/_gzj/"
                "item.htm?query=1&channel_id=163053568"),
            bid(2, 2, 2, B, url="https://www.nexmark.com//b/c/item.htm"),
            bid(3, 3, 3, B, url="https://www.nexmark.com/a"),
            bid(4, 4, 4, B, url="https://www.nexmark.com/a/b/"),
            bid(5, 5, 5, B, url="https://www.nexmark.com/a/b/c/d/item.htm"),
        ]
        self.check("q22", events, [
            "1,1,1,channel-1,rswp,bsu,_gzj",
            "2,2,2,channel-1,,b,c",           # empty piece kept
            "3,3,3,channel-1,a,NULL,NULL",    # missing pieces are NULL
            "4,4,4,channel-1,a,b,",           # trailing empty piece kept
            "5,5,5,channel-1,a,b,c",
        ])

    def test_q13_full_side_table(self):
        side = "".join("%d,%d\n" % (k, k) for k in range(10000))
        events = [bid(10000, 1, 5, B), bid(11234, 2, 6, B + 1),
                  bid(9999, 3, 7, B + 2), bid(1000, 4, 8, B + 3)]
        self.check("q13", events, [
            "10000,1,5,%d,0" % B, "11234,2,6,%d,1234" % (B + 1),
            "9999,3,7,%d,9999" % (B + 2), "1000,4,8,%d,1000" % (B + 3),
        ], side=side)

    def test_q13_value_comes_from_the_table_inner_join(self):
        # key 1 listed twice -> two rows; key 2 absent -> no row
        side = "1,one\n1,uno\n"
        events = [bid(10001, 1, 5, B), bid(10002, 2, 6, B)]
        self.check("q13", events, ["10001,1,5,%d,one" % B,
                                   "10001,1,5,%d,uno" % B], side=side)


# ---------------------------------------------------------------------------
# Joins
# ---------------------------------------------------------------------------

class JoinQueries(Base):
    def test_q3_filters_and_late_person(self):
        events = [
            person(1000, B, "ann lee", "portland", "or"),
            person(1001, B, "bob ray", "seattle", "wa"),
            person(1003, B, "dan fox", "bend", "OR"),  # upper case: no
            auction(2000, B + 1, seller=1000, category=10),  # match
            auction(2001, B + 2, seller=1002, category=10),  # person later
            auction(2002, B + 3, seller=1000, category=11),  # category
            auction(2003, B + 4, seller=1001, category=10),  # state wa
            auction(2004, B + 5, seller=1003, category=10),  # state OR
            auction(2005, B + 6, seller=1999, category=10),  # no person
            person(1002, B + 7, "cat kim", "los angeles", "ca"),
            person(1004, B + 8, "eve poe", "boise", "id"),
            auction(2006, B + 9, seller=1004, category=10),
        ]
        self.check("q3", events, [
            "ann lee,portland,or,2000",
            "cat kim,los angeles,ca,2001",
            "eve poe,boise,id,2006",
        ])

    Q4_EVENTS = [
        auction(2000, B, category=10, expires=B + 100),
        bid(2000, 1, 50, B),           # at A.dateTime: counts
        bid(2001, 1, 33, B + 10),      # before its auction, same time
        auction(2001, B + 10, category=10, expires=B + 20),
        bid(2001, 1, 20, B + 15),
        bid(2002, 1, 500, B + 19),     # before A.dateTime: no
        auction(2002, B + 20, category=11, expires=B + 30),
        bid(2002, 1, 7, B + 25),
        bid(2000, 1, 10, B + 50),
        bid(2000, 1, 70, B + 100),     # at A.expires: counts
        bid(2000, 1, 999, B + 101),    # after A.expires: no
        auction(2003, B + 200, category=12, expires=B + 250),
        bid(2003, 1, 5, B + 300),      # after expires: category 12 absent
        bid(2999, 1, 1, B + 300),      # auction never arrives
    ]

    def test_q4_average_winning_price(self):
        # final(2000) = 70, final(2001) = 33 (bid before the auction row),
        # final(2002) = 7; category 10: (70 + 33) // 2 = 51; category 11: 7
        self.check("q4", self.Q4_EVENTS, ["10,51", "11,7"])

    def test_q9_winners_ties_and_late_auction(self):
        events = [
            auction(3000, B, seller=1000, category=10, expires=B + 1000,
                    extra="a0"),
            bid(3000, 11, 100, B + 5, extra="b1"),
            bid(3000, 12, 100, B + 5, extra="b2"),  # full tie: b1 first
            bid(3000, 13, 100, B + 6, extra="b3"),  # later dateTime
            bid(3000, 14, 90, B + 7, extra="b4"),
            auction(3002, B + 10, seller=1001, category=11, expires=B + 20,
                    extra="a2"),
            bid(3002, 31, 50, B + 10, extra="c1"),
            bid(3002, 32, 80, B + 20, extra="c2"),  # at expires, higher
            bid(3002, 33, 200, B + 21, extra="c3"),  # after expires
            bid(3003, 41, 500, B + 29, extra="d1"),  # before A.dateTime
            auction(3003, B + 30, expires=B + 40),   # no qualifying bid
            # the auction arrives after two of its tied bids
            bid(3001, 21, 40, B + 900, extra="e1"),
            bid(3001, 22, 40, B + 900, extra="e2"),
            auction(3001, B + 900, seller=1002, category=12, expires=B + 950,
                    extra="a1"),
            bid(3001, 23, 40, B + 900, extra="e3"),
            bid(3001, 24, 39, B + 901, extra="e4"),
        ]
        self.check("q9", events, [
            "3000,item3000,desc3000,100,200,%d,%d,1000,10,a0,"
            "3000,11,100,%d,b1" % (B, B + 1000, B + 5),
            "3002,item3002,desc3002,100,200,%d,%d,1001,11,a2,"
            "3002,32,80,%d,c2" % (B + 10, B + 20, B + 20),
            "3001,item3001,desc3001,100,200,%d,%d,1002,12,a1,"
            "3001,21,40,%d,e1" % (B + 900, B + 950, B + 900),
        ])

    def test_q9_agrees_with_q4_events(self):
        # the q4 file: winners 2000 -> 70, 2001 -> 33, 2002 -> 7
        got = self.run_query("q9", self.Q4_EVENTS)
        winners = sorted((r.split(",")[0], r.split(",")[12]) for r in got)
        self.assertEqual(winners, [("2000", "70"), ("2001", "33"),
                                   ("2002", "7")])

    def test_q20_join_without_time_condition(self):
        events = [
            bid(4000, 1, 10, B, extra="e1"),  # before its auction
            auction(4000, B + 1, seller=1000, category=10, expires=B + 2,
                    extra="a0"),
            auction(4001, B + 1, category=11),
            bid(4000, 2, 20, B + 500, extra="e2"),  # after expires: joins
            bid(4001, 3, 30, B + 501, extra="e3"),  # category 11
            bid(4002, 4, 40, B + 502, extra="e4"),  # no auction
        ]
        tail = "item4000,desc4000,100,200,%d,%d,1000,10,a0" % (B + 1, B + 2)
        self.check("q20", events, [
            "4000,1,10,channel-1,%s,%d,e1,%s" % (URL, B, tail),
            "4000,2,20,channel-1,%s,%d,e2,%s" % (URL, B + 500, tail),
        ])


# ---------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------

class WindowQueries(Base):
    def test_q5_hop_ties_and_boundaries(self):
        events = [
            bid(1, 9, 1, B),           # windows s = B-8000 .. B
            bid(2, 9, 1, B),           # windows s = B-8000 .. B
            bid(1, 9, 1, B + 1999),    # windows s = B-8000 .. B
            bid(2, 9, 1, B + 2000),    # windows s = B-6000 .. B+2000
            bid(3, 9, 1, B + 9999),    # windows s = B .. B+8000
            bid(3, 9, 1, B + 10000),   # windows s = B+2000 .. B+10000
        ]
        # s=B-8000: a1 2, a2 1        -> 1,2
        # s=B-6000 .. B-2000 (3 windows): a1 2, a2 2 -> 1,2 and 2,2 each
        # s=B: a1 2, a2 2, a3 1       -> 1,2 and 2,2
        # s=B+2000: a2 1, a3 2        -> 3,2
        # s=B+4000, B+6000, B+8000: a3 2 -> 3,2
        # s=B+10000: a3 1             -> 3,1
        self.check("q5", events,
                   ["1,2"] * 5 + ["2,2"] * 4 + ["3,2"] * 4 + ["3,1"])

    def test_q7_inclusive_window_end_matches_twice(self):
        events = [
            bid(1, 101, 50, B + 100, extra="a"),
            bid(2, 102, 80, B + 200, extra="b"),
            bid(3, 103, 80, B + 9999, extra="c"),
            bid(4, 104, 80, B + 10000, extra="d"),
            bid(5, 105, 60, B + 15000, extra="e"),
            bid(6, 106, 60, B + 20000, extra="f"),
            bid(8, 108, 50, B + 35000, extra="h"),
        ]
        # windows: [B, B+10000) max 80, E=B+10000; [B+10000, ..) max 80
        # (bid 4), E=B+20000; [B+20000, ..) max 60, E=B+30000;
        # [B+30000, ..) max 50, E=B+40000.
        # bid 4 (80 at B+10000) matches E=B+10000 and E=B+20000;
        # bid 5 (60 at B+15000) is before B+30000-10000; bid 1 (50) is
        # far before B+40000-10000.
        self.check("q7", events, [
            "2,80,102,%d,b" % (B + 200),
            "3,80,103,%d,c" % (B + 9999),
            "4,80,104,%d,d" % (B + 10000),
            "4,80,104,%d,d" % (B + 10000),
            "6,60,106,%d,f" % (B + 20000),
            "8,50,108,%d,h" % (B + 35000),
        ])

    def test_q7_bid_at_window_end_matches_previous_window_only(self):
        events = [
            bid(1, 101, 80, B + 5000, extra="a"),
            bid(2, 102, 80, B + 10000, extra="b"),  # = E of first window
            bid(3, 103, 90, B + 12000, extra="c"),  # second window max 90
        ]
        self.check("q7", events, [
            "1,80,101,%d,a" % (B + 5000),
            "2,80,102,%d,b" % (B + 10000),
            "3,90,103,%d,c" % (B + 12000),
        ])

    def test_q8_window_join_boundaries_and_distinct(self):
        events = [
            auction(1, B + 5000, seller=1005),  # before the person, same win
            person(1005, B + 6000, "eve"),
            person(1000, B + 9999, "ann"),      # window B
            auction(2, B + 10000, seller=1000),  # window B+10000: no row
            person(1001, B + 10000, "bob"),
            auction(3, B + 10000, seller=1001),
            auction(4, B + 19999, seller=1001),  # same window: one row
            person(1002, B + 19999, "cy"),
            auction(5, B + 19999, seller=1002),
            person(1003, B + 20000, "dee"),
            person(1003, B + 20000, "dee"),     # duplicate: one row
            auction(6, B + 25000, seller=1003),
            auction(7, B + 26000, seller=1004),  # no person
        ]
        self.check("q8", events, [
            "1001,bob,%d" % (B + 10000),
            "1002,cy,%d" % (B + 10000),
            "1003,dee,%d" % (B + 20000),
            "1005,eve,%d" % B,
        ])

    def test_q11_sessions(self):
        events = [
            bid(1, 1, 10, B),
            bid(1, 3, 10, B + 100),
            bid(1, 2, 10, B + 5000),
            bid(2, 2, 10, B + 5000),
            bid(1, 1, 10, B + 10000),   # gap exactly 10000: same session
            bid(1, 2, 10, B + 14000),
            bid(1, 1, 10, B + 20001),   # gap 10001: new session
            bid(1, 1, 10, B + 25000),
            bid(1, 4, 10, B + 30000),   # chain: 30000, 39000, 48000
            bid(1, 4, 10, B + 39000),
            bid(1, 4, 10, B + 48000),
        ]
        self.check("q11", events, [
            "1,2,%d,%d" % (B, B + 20000),
            "1,2,%d,%d" % (B + 20001, B + 35000),
            "2,3,%d,%d" % (B + 5000, B + 24000),
            "3,1,%d,%d" % (B + 100, B + 10100),
            "4,3,%d,%d" % (B + 30000, B + 58000),
        ])


# ---------------------------------------------------------------------------
# Final-table aggregations
# ---------------------------------------------------------------------------

DAY_BIDS = [
    # 2023-12-31
    bid(1, 10, 9999, B - 3, channel="Google"),     # rank1
    bid(1, 11, 10000, B - 2, channel="google"),    # rank2
    bid(2, 10, 999999, B - 1, channel="Google"),   # rank2
    # 2024-01-01
    bid(1, 10, 1000000, B, channel="Google"),      # rank3
    bid(3, 12, 5, B + 1, channel="channel-1"),     # rank1
    bid(3, 12, 6, B + DAY - 1, channel="channel-1"),  # rank1, 23:59
    # 2024-01-02
    bid(4, 13, 7, B + DAY, channel="channel-1"),   # rank1
]


class AggregateQueries(Base):
    def test_q15_per_day(self):
        # columns: day, bids (total r1 r2 r3), bidders (...), auctions (...)
        self.check("q15", DAY_BIDS, [
            "2023-12-31,3,1,2,0,2,1,2,0,2,1,2,0",
            "2024-01-01,3,2,0,1,2,1,0,1,2,1,0,1",
            "2024-01-02,1,1,0,0,1,1,0,0,1,1,0,0",
        ])

    def test_q16_per_channel_and_day(self):
        self.check("q16", DAY_BIDS, [
            "Google,2023-12-31,23:59,2,1,1,0,1,1,1,0,2,1,1,0",
            "google,2023-12-31,23:59,1,0,1,0,1,0,1,0,1,0,1,0",
            "Google,2024-01-01,00:00,1,0,0,1,1,0,0,1,1,0,0,1",
            # 00:00 and 23:59 -> max 23:59
            "channel-1,2024-01-01,23:59,2,2,0,0,1,1,0,0,1,1,0,0",
            "channel-1,2024-01-02,00:00,1,1,0,0,1,1,0,0,1,1,0,0",
        ])

    def test_q16_minute_is_zero_padded_24h(self):
        events = [bid(1, 1, 1, B + 9 * HOUR + 5 * 60000),
                  bid(1, 1, 1, B + 13 * HOUR + 7 * 60000 + 59999)]
        self.check("q16", events,
                   ["channel-1,2024-01-01,13:07,2,2,0,0,1,1,0,0,1,1,0,0"])

    def test_q17_per_auction_and_day(self):
        self.check("q17", DAY_BIDS, [
            "1,2023-12-31,2,1,1,0,9999,10000,9999,19999",  # 19999 // 2
            "2,2023-12-31,1,0,1,0,999999,999999,999999,999999",
            "1,2024-01-01,1,0,0,1,1000000,1000000,1000000,1000000",
            "3,2024-01-01,2,2,0,0,5,6,5,11",               # 11 // 2
            "4,2024-01-02,1,1,0,0,7,7,7,7",
        ])

    def test_q18_last_bid_ties_go_to_last_in_file(self):
        events = [
            bid(1, 10, 1, B, extra="a"),
            bid(2, 10, 9, B + 1, extra="d"),
            bid(1, 11, 4, B + 2, extra="e"),
            bid(1, 11, 5, B + 3, extra="f"),
            bid(1, 10, 2, B + 5, channel="Baidu", extra="b"),
            bid(1, 10, 3, B + 5, channel="Apple", extra="c"),  # wins the tie
        ]
        self.check("q18", events, [
            "1,10,3,Apple,%s,%d,c" % (URL, B + 5),
            "2,10,9,channel-1,%s,%d,d" % (URL, B + 1),
            "1,11,5,channel-1,%s,%d,f" % (URL, B + 3),
        ])

    def test_q19_top10_with_ties_in_file_order(self):
        prices = [5, 9, 9, 7, 3, 9, 1, 8, 3, 6, 4, 3]  # bidders 1..12
        events = [bid(1, i + 1, p, B + i, extra="x%d" % (i + 1))
                  for i, p in enumerate(prices)]
        events += [bid(2, 50, 10, B + 20, extra="y"),
                   bid(2, 51, 20, B + 21, extra="z")]
        # auction 1: 9(b2) 9(b3) 9(b6) 8(b8) 7(b4) 6(b10) 5(b1) 4(b11)
        # 3(b5) 3(b9) | 3(b12) 1(b7) dropped
        order = [2, 3, 6, 8, 4, 10, 1, 11, 5, 9]
        expected = ["1,%d,%d,channel-1,%s,%d,x%d,%d"
                    % (b, prices[b - 1], URL, B + b - 1, b, rank)
                    for rank, b in enumerate(order, 1)]
        expected += ["2,51,20,channel-1,%s,%d,z,1" % (URL, B + 21),
                     "2,50,10,channel-1,%s,%d,y,2" % (URL, B + 20)]
        self.check("q19", events, expected)


# ---------------------------------------------------------------------------
# Formatting helpers
# ---------------------------------------------------------------------------

class Helpers(unittest.TestCase):
    def test_price_eur(self):
        self.assertEqual(ref.price_eur(100), "90.800")
        self.assertEqual(ref.price_eur(73134520), "66406144.160")
        self.assertEqual(ref.price_eur(1), "0.908")

    def test_utc_day_minute_hour(self):
        self.assertEqual(ref.utc_day(B - 1), "2023-12-31")
        self.assertEqual(ref.utc_day(B), "2024-01-01")
        self.assertEqual(ref.utc_day(0), "1970-01-01")
        self.assertEqual(ref.utc_day(951782400000), "2000-02-29")
        self.assertEqual(ref.utc_minute(B - 1), "23:59")
        self.assertEqual(ref.utc_minute(B + 61000), "00:01")
        self.assertEqual(ref.utc_hour(B - 1), 23)

    def test_hop_starts(self):
        self.assertEqual(list(ref.hop_starts(B + 1999)),
                         [B - 8000, B - 6000, B - 4000, B - 2000, B])
        self.assertEqual(list(ref.hop_starts(B + 2000)),
                         [B - 6000, B - 4000, B - 2000, B, B + 2000])


# ---------------------------------------------------------------------------
# Command line: output format, exit codes, malformed input
# ---------------------------------------------------------------------------

class CommandLine(Base):
    def test_output_is_sorted_with_trailing_newlines(self):
        events = [bid(9, 1, 1, B), bid(10, 1, 2, B), bid(100, 1, 3, B)]
        path = self.write(jsonl(events))
        r = self.cli("--query", "Q2", "--events", path)  # no row: 123 | ?
        self.assertEqual((r.returncode, r.stdout), (0, ""))
        r = self.cli("--query", "q0", "--events", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        # byte order: "10,..." < "100,..." < "9,..."
        self.assertEqual(r.stdout, "10,1,2,%d,bx\n100,1,3,%d,bx\n9,1,1,%d,bx\n"
                         % (B, B, B))

    def test_last_line_without_newline_is_accepted(self):
        path = self.write(jsonl([bid(1, 2, 3, B)]).rstrip("\n"))
        r = self.cli("--query", "q2", "--events", path)
        self.assertEqual((r.returncode, r.stderr), (0, ""))

    def test_q12_and_uncovered_queries(self):
        path = self.write(jsonl([bid(1, 2, 3, B)]))
        r = self.cli("--query", "q12", "--events", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("q12", r.stderr)
        self.assertIn("PROCTIME", r.stderr)
        for q in ("q6", "q10", "q23"):
            r = self.cli("--query", q, "--events", path)
            self.assertEqual(r.returncode, 2, q)
            self.assertIn("not covered", r.stderr)
            self.assertEqual(r.stdout, "")
        r = self.cli("--query", "q99", "--events", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown query", r.stderr)

    def test_q13_needs_side_input(self):
        path = self.write(jsonl([bid(1, 2, 3, B)]))
        r = self.cli("--query", "q13", "--events", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--side-input", r.stderr)

    def assert_bad_input(self, content, lineno, fragment, query="q0",
                         extra_args=(), binary=False):
        path = self.write(content, binary=binary)
        r = subprocess.run([sys.executable, REF, "--query", query,
                            "--events", path, *extra_args],
                           capture_output=True)
        stderr = r.stderr.decode("utf-8", "replace")
        self.assertEqual(r.returncode, 1, stderr)
        self.assertEqual(r.stdout, b"")
        self.assertNotIn("Traceback", stderr)
        if lineno is not None:
            self.assertIn("line %d:" % lineno, stderr)
        self.assertIn(fragment, stderr)

    def test_malformed_event_lines(self):
        good = json.dumps(bid(1, 2, 3, B), separators=(",", ":")) + "\n"

        def with_bid(**over):
            e = bid(1, 2, 3, B)
            e["bid"].update(over)
            return json.dumps(e) + "\n"

        no_price = bid(1, 2, 3, B)
        del no_price["bid"]["price"]
        both = bid(1, 2, 3, B)
        both["person"] = person(1, B)["person"]
        cases = [
            (good + '{"event_type":2,"bid":\n', 2, "invalid JSON"),
            (json.dumps(no_price) + "\n", 1, "bid.price is missing"),
            (good + with_bid(price="5"), 2, "must be an integer"),
            (with_bid(price=True), 1, "must be an integer"),
            (with_bid(price=1.5), 1, "must be an integer"),
            (with_bid(price=-1), 1, "out of range"),
            (with_bid(price=2 ** 63), 1, "out of range"),
            (with_bid(channel=None), 1, "must be a string"),
            (with_bid(extra="a,b"), 1, "comma"),
            (with_bid(colour="red"), 1, "unexpected bid field"),
            ('{"event_type":0,"bid":%s}\n' % json.dumps(bid(1, 2, 3, B)["bid"]),
             1, "event_type must be 2"),
            (json.dumps(both) + "\n", 1, "exactly one of"),
            ('{"event_type":2}\n', 1, "exactly one of"),
            ("[1,2]\n", 1, "expected a JSON object"),
            (good + "\n" + good, 2, "empty line"),
            (good + with_bid(date_time=B - 1), 2, "non-decreasing"),
        ]
        for content, lineno, fragment in cases:
            with self.subTest(fragment=fragment, content=content[:60]):
                self.assert_bad_input(content, lineno, fragment)

    def test_decreasing_time_across_streams_is_rejected(self):
        content = jsonl([bid(1, 2, 3, B + 5), person(1000, B + 4)])
        # q0 reads only bids, but every line is validated
        self.assert_bad_input(content, 2, "non-decreasing")

    def test_non_utf8_line(self):
        content = jsonl([bid(1, 2, 3, B)]).encode() + b'{"x":"\xff"}\n'
        self.assert_bad_input(content, 2, "UTF-8", binary=True)

    def test_missing_event_file(self):
        self.assert_bad_input_path("/nonexistent/events.jsonl")

    def assert_bad_input_path(self, path):
        r = self.cli("--query", "q0", "--events", path)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot open", r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_malformed_side_input(self):
        events = self.write(jsonl([bid(1, 2, 3, B)]))
        for side, lineno, fragment in [("0,0\n1;1\n", 2, "key,value"),
                                       ("x,1\n", 1, "not an integer"),
                                       ("0,0\n\n", 2, "key,value")]:
            with self.subTest(side=side):
                side_path = self.write(side)
                r = self.cli("--query", "q13", "--events", events,
                             "--side-input", side_path)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("line %d:" % lineno, r.stderr)
                self.assertIn(fragment, r.stderr)
                self.assertNotIn("Traceback", r.stderr)


# ---------------------------------------------------------------------------
# Smoke test: a seeded nexmark-shaped file through every query, with
# cross-query consistency checks
# ---------------------------------------------------------------------------

def synthetic_events(n, seed):
    """n events shaped like the generator's: per 50 events 1 person,
    3 auctions, 46 bids; 10 events per ms; ids that may point ahead."""
    rng = random.Random(seed)
    events = []
    next_person, next_auction = 1000, 1000
    for i in range(n):
        t = B - 5000 + i // 10 * 700  # spread over a few windows
        r = i % 50
        if r == 0:
            events.append(person(next_person, t, state=rng.choice(
                ["az", "ca", "id", "or", "wa", "wy"]),
                name=rng.choice(["ann lee", "bob ray"])))
            next_person += 1
        elif r <= 3:
            events.append(auction(
                next_auction, t, seller=rng.randrange(1000, next_person + 3),
                category=rng.randrange(10, 15),
                expires=t + 1 + rng.randrange(4000)))
            next_auction += 1
        else:
            ch = rng.choice(["Google", "Apple", "channel-%d" % rng.randrange(9)])
            url = "https://www.nexmark.com/a/b/c/item.htm?query=1"
            if rng.random() < 0.7:
                url += "&channel_id=%d" % rng.randrange(100)
            events.append(bid(
                rng.randrange(max(1000, next_auction - 8), next_auction + 3),
                rng.randrange(1000, next_person + 3),
                rng.choice([100, 5000, 10000, 999999, 1000000, 2000000,
                            rng.randrange(100, 60_000_000)]),
                t, channel=ch, url=url, extra=rng.choice(["abc", "cc", "x"])))
    return events


class Smoke(Base):
    def test_all_queries_on_synthetic_data(self):
        events = synthetic_events(3000, seed=7)
        path = self.write(jsonl(events))
        side = self.write("".join("%d,%d\n" % (k, k) for k in range(10000)))
        bids = [e["bid"] for e in events if "bid" in e]
        out = {q: ref.run_query(q, path, side) for q in ref.QUERIES}

        self.assertEqual(len(out["q0"]), len(bids))
        self.assertEqual(len(out["q1"]), len(bids))
        self.assertEqual(len(out["q13"]), len(bids))
        self.assertEqual(len(out["q22"]), len(bids))
        # every bid is in exactly one session / day / (auction, day)
        self.assertEqual(sum(int(r.split(",")[1]) for r in out["q11"]),
                         len(bids))
        self.assertEqual(sum(int(r.split(",")[1]) for r in out["q15"]),
                         len(bids))
        self.assertEqual(sum(int(r.split(",")[2]) for r in out["q17"]),
                         len(bids))
        self.assertEqual(sum(int(r.split(",")[3]) for r in out["q16"]),
                         len(bids))
        self.assertEqual(len(out["q18"]),
                         len({(b["bidder"], b["auction"]) for b in bids}))
        # q19: ranks 1..min(10, n) per auction
        per_auction = Counter(b["auction"] for b in bids)
        ranks = defaultdict(list)
        for r in out["q19"]:
            f = r.split(",")
            ranks[int(f[0])].append(int(f[-1]))
        self.assertEqual({a: sorted(v) for a, v in ranks.items()},
                         {a: list(range(1, min(10, n) + 1))
                          for a, n in per_auction.items()})
        # q4 = per category avg of q9's winning prices
        by_cat = defaultdict(list)
        for r in out["q9"]:
            f = r.split(",")
            by_cat[f[8]].append(int(f[12]))
        self.assertTrue(by_cat)
        self.assertEqual(sorted(out["q4"]),
                         sorted("%s,%d" % (c, sum(v) // len(v))
                                for c, v in by_cat.items()))
        # q5 has rows; q7: at least one row per tumbling window (its max)
        self.assertTrue(out["q5"])
        windows = {b["date_time"] // 10000 for b in bids}
        self.assertGreaterEqual(len(out["q7"]), len(windows))
        for q in ("q3", "q8", "q14", "q20", "q21"):
            self.assertTrue(out[q], q)


if __name__ == "__main__":
    unittest.main()
