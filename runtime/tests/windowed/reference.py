#!/usr/bin/env python3
"""Independent reference implementation of Apache Flink's keyed event-time
window semantics for the `windowed_aggregate` command-line contract.

Usage:
    python3 reference.py --input FILE --window SPEC \
        --out-of-orderness MS --allowed-lateness MS

SPEC is one of
    tumbling:SIZE[:OFFSET]   TumblingEventTimeWindows.of(size, offset)
    sliding:SIZE:SLIDE       SlidingEventTimeWindows.of(size, slide)  (offset 0)
    session:GAP              EventTimeSessionWindows.withGap(gap)

Input: CSV lines `key,timestamp_ms,amount`; lines starting with '#' and
empty lines are skipped. One source reads the file in order; after every
event it emits the watermark `max_ts_so_far - out_of_orderness - 1`
(BoundedOutOfOrdernessWatermarks.onEvent/onPeriodicEmit formula, emitted
after each event); watermarks that do not advance are ignored (the
operator's timer service only moves forward); end of input emits
Long.MAX_VALUE.

Output (printed sorted, as Python's sorted() on str):
    window,KEY,START,END,COUNT,SUM   one line per window firing
    late,KEY,TIMESTAMP,AMOUNT        one line per late element (side output)

The structure mirrors Flink's classes so each rule can be traced to its
source:
  * TimeWindow.getWindowStartWithOffset / TimeWindow.mergeWindows /
    TimeWindow.intersects / TimeWindow.cover / TimeWindow.maxTimestamp
  * TumblingEventTimeWindows / SlidingEventTimeWindows /
    EventTimeSessionWindows .assignWindows
  * MergingWindowSet.addWindow / retireWindow / getStateWindow
  * WindowOperator.processElement / onEventTime / isWindowLate /
    isElementLate / cleanupTime / registerCleanupTimer / deleteCleanupTimer /
    clearAllState and the merge function passed to addWindow
  * EventTimeTrigger.onElement / onEventTime / onMerge / clear
  * InternalTimerServiceImpl.advanceWatermark (timers are a set keyed by
    (timestamp, key, namespace); registering an existing timer is a no-op)

Only the Python standard library is used. Integers are Python ints; the
only place where Java long overflow is emulated is cleanupTime (clamped to
Long.MAX_VALUE, exactly as Flink does).
"""

import argparse
import heapq
import sys

I64_MIN = -(2 ** 63)  # Long.MIN_VALUE
I64_MAX = 2 ** 63 - 1  # Long.MAX_VALUE


# --------------------------------------------------------------------------
# TimeWindow
# --------------------------------------------------------------------------
class TimeWindow(tuple):
    """[start, end) -- an immutable (start, end) pair, hashable, ordered by
    (start, end) (the ordering is only used to make timer firing order
    deterministic; output is sorted anyway)."""

    __slots__ = ()

    def __new__(cls, start, end):
        return tuple.__new__(cls, (start, end))

    @property
    def start(self):
        return self[0]

    @property
    def end(self):
        return self[1]

    def max_timestamp(self):
        # TimeWindow.maxTimestamp(): end - 1
        return self[1] - 1

    def intersects(self, other):
        # TimeWindow.intersects: this.start <= other.end && this.end >= other.start
        # (touching windows, e.g. [0,10) and [10,20), DO intersect)
        return self.start <= other.end and self.end >= other.start

    def cover(self, other):
        # TimeWindow.cover
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    def __repr__(self):
        return "TimeWindow[%d,%d)" % self


def window_start_with_offset(timestamp, offset, size):
    # TimeWindow.getWindowStartWithOffset: timestamp - ((timestamp - offset) mod size)
    # with a non-negative ("mathematical") modulo; Python's % on a positive
    # divisor already is non-negative, which is exactly what Flink's
    # "if (remainder < 0) remainder += windowSize" achieves.
    return timestamp - ((timestamp - offset) % size)


def merge_windows(windows):
    """TimeWindow.mergeWindows: sort by start, sweep, and group windows that
    intersect the running cover. Returns a list of (merge_result, set_of_windows)
    for every group with MORE THAN ONE distinct window (Flink collects the
    group in a HashSet, so a duplicate of an existing window is a group of
    size 1 and produces no merge callback)."""
    result = []
    current = None  # [cover, set]
    for cand in sorted(windows, key=lambda w: w.start):
        if current is None:
            current = [cand, {cand}]
        elif current[0].intersects(cand):
            current[0] = current[0].cover(cand)
            current[1].add(cand)
        else:
            result.append(current)
            current = [cand, {cand}]
    if current is not None:
        result.append(current)
    return [(cover, members) for cover, members in result if len(members) > 1]


# --------------------------------------------------------------------------
# Window assigners
# --------------------------------------------------------------------------
class TumblingAssigner:
    merging = False

    def __init__(self, size, offset):
        if size <= 0:
            raise ValueError("tumbling size must be > 0")
        self.size = size
        # TumblingEventTimeWindows uses (globalOffset + staggerOffset) % size;
        # since the start is computed modulo size this is the same as offset.
        self.offset = offset

    def assign(self, ts):
        # TumblingEventTimeWindows.assignWindows: one window [start, start+size)
        start = window_start_with_offset(ts, self.offset, self.size)
        return [TimeWindow(start, start + self.size)]


class SlidingAssigner:
    merging = False

    def __init__(self, size, slide):
        if size <= 0 or slide <= 0:
            raise ValueError("sliding size and slide must be > 0")
        self.size = size
        self.slide = slide
        self.offset = 0

    def assign(self, ts):
        # SlidingEventTimeWindows.assignWindows:
        #   lastStart = getWindowStartWithOffset(ts, offset, slide)
        #   for (start = lastStart; start > ts - size; start -= slide)
        #       windows.add(new TimeWindow(start, start + size))
        out = []
        start = window_start_with_offset(ts, self.offset, self.slide)
        while start > ts - self.size:
            out.append(TimeWindow(start, start + self.size))
            start -= self.slide
        return out


class SessionAssigner:
    merging = True

    def __init__(self, gap):
        if gap <= 0:
            raise ValueError("session gap must be > 0")
        self.gap = gap

    def assign(self, ts):
        # EventTimeSessionWindows.assignWindows: [ts, ts + gap)
        return [TimeWindow(ts, ts + self.gap)]


# --------------------------------------------------------------------------
# MergingWindowSet (one per key)
# --------------------------------------------------------------------------
class MergingWindowSet:
    def __init__(self):
        # window -> state window (the namespace under which its state lives)
        self.mapping = {}

    def get_state_window(self, window):
        return self.mapping.get(window)

    def retire_window(self, window):
        # MergingWindowSet.retireWindow
        if self.mapping.pop(window, None) is None:
            raise RuntimeError("retiring window %r not in set" % (window,))

    def add_window(self, new_window, merge_function):
        """MergingWindowSet.addWindow, step by step."""
        windows = list(self.mapping.keys()) + [new_window]
        merge_results = merge_windows(windows)

        result_window = new_window
        merged_new_window = False

        for merge_result, merged_windows in merge_results:
            merged_windows = set(merged_windows)
            # "if our new window is in the merged windows make the merge
            # result the result window"
            if new_window in merged_windows:
                merged_windows.discard(new_window)
                merged_new_window = True
                result_window = merge_result

            # "pick any of the merged windows and choose that window's state
            # window as the state window for the merge result". Every
            # remaining window is pre-existing here (see below), so which one
            # is picked does not influence any observable output; pick the
            # smallest for determinism.
            picked = min(merged_windows)
            merged_state_window = self.mapping.get(picked)

            merged_state_windows = []
            for mw in sorted(merged_windows):
                res = self.mapping.pop(mw, None)
                if res is not None:
                    merged_state_windows.append(res)

            self.mapping[merge_result] = merged_state_window

            # don't put the target state window into the merged windows
            merged_state_windows = [s for s in merged_state_windows
                                    if s != merged_state_window]

            # "don't merge the new window itself, it never had any state
            # associated with it i.e. if we are only merging one pre-existing
            # window into itself without extending the pre-existing window"
            if not (merge_result in merged_windows and len(merged_windows) == 1):
                merge_function(merge_result, merged_windows,
                               self.mapping[merge_result], merged_state_windows)

        # "the new window created a new, self-contained window without merging"
        if not merge_results or (result_window == new_window and not merged_new_window):
            self.mapping[result_window] = result_window

        return result_window


# --------------------------------------------------------------------------
# WindowOperator with EventTimeTrigger and an AggregateFunction (count, sum)
# --------------------------------------------------------------------------
class WindowOperator:
    def __init__(self, assigner, allowed_lateness):
        if allowed_lateness < 0:
            raise ValueError("allowed lateness must be >= 0")
        self.assigner = assigner
        self.allowed_lateness = allowed_lateness
        # InternalTimerService.currentWatermark starts at Long.MIN_VALUE
        self.watermark = I64_MIN
        # windowState: (key, state_window) -> [count, sum]; absent == null
        self.state = {}
        # event-time timers: a SET of (timestamp, key, window), plus a heap
        # with lazy deletion for ordered firing
        self.timers = set()
        self.timer_heap = []
        # per-key MergingWindowSet (merging assigners only)
        self.merging_sets = {}
        self.output = []

    # ---- timer service ---------------------------------------------------
    def register_timer(self, time, key, window):
        t = (time, key, window)
        if t not in self.timers:  # timers are deduplicated
            self.timers.add(t)
            heapq.heappush(self.timer_heap, t)

    def delete_timer(self, time, key, window):
        self.timers.discard((time, key, window))

    def advance_watermark(self, wm):
        # InternalTimerServiceImpl.advanceWatermark: set currentWatermark
        # first, then fire every timer with timestamp <= wm in time order.
        if wm <= self.watermark:
            return  # watermarks only ever increase
        self.watermark = wm
        while self.timer_heap and self.timer_heap[0][0] <= wm:
            t = heapq.heappop(self.timer_heap)
            if t not in self.timers:
                continue  # deleted timer
            self.timers.discard(t)
            self.on_event_time(*t)

    # ---- WindowOperator helpers -------------------------------------------
    def cleanup_time(self, window):
        # WindowOperator.cleanupTime: maxTimestamp + allowedLateness, and
        # Long.MAX_VALUE if that overflows.
        c = window.max_timestamp() + self.allowed_lateness
        return c if c <= I64_MAX else I64_MAX

    def is_window_late(self, window):
        # WindowOperator.isWindowLate: cleanupTime(window) <= currentWatermark
        return self.cleanup_time(window) <= self.watermark

    def is_element_late(self, ts):
        # WindowOperator.isElementLate: ts + allowedLateness <= currentWatermark
        return ts + self.allowed_lateness <= self.watermark

    def register_cleanup_timer(self, key, window):
        # WindowOperator.registerCleanupTimer: no GC timer for "end of time"
        c = self.cleanup_time(window)
        if c == I64_MAX:
            return
        self.register_timer(c, key, window)

    def delete_cleanup_timer(self, key, window):
        # WindowOperator.deleteCleanupTimer
        c = self.cleanup_time(window)
        if c == I64_MAX:
            return
        self.delete_timer(c, key, window)

    def emit(self, key, window, acc):
        # emitWindowContents: the *actual* (possibly merged) window is emitted
        self.output.append("window,%s,%d,%d,%d,%d"
                           % (key, window.start, window.end, acc[0], acc[1]))

    def add_to_state(self, key, state_window, amount):
        acc = self.state.get((key, state_window))
        if acc is None:
            acc = [0, 0]
            self.state[(key, state_window)] = acc
        acc[0] += 1
        acc[1] += amount

    # ---- EventTimeTrigger ---------------------------------------------------
    def trigger_on_element(self, key, window):
        # EventTimeTrigger.onElement
        if window.max_timestamp() <= self.watermark:
            return True  # FIRE: the watermark is already past the window
        self.register_timer(window.max_timestamp(), key, window)
        return False  # CONTINUE

    def trigger_clear(self, key, window):
        # EventTimeTrigger.clear: deleteEventTimeTimer(window.maxTimestamp())
        self.delete_timer(window.max_timestamp(), key, window)

    def trigger_on_merge(self, key, window):
        # EventTimeTrigger.onMerge: only register if not yet past the end
        if window.max_timestamp() > self.watermark:
            self.register_timer(window.max_timestamp(), key, window)

    # ---- WindowOperator.processElement -------------------------------------
    def process_element(self, key, ts, amount):
        windows = self.assigner.assign(ts)
        is_skipped = True

        if self.assigner.merging:
            mws = self.merging_sets.setdefault(key, MergingWindowSet())

            def merge_function(merge_result, merged_windows, state_window_result,
                               merged_state_windows):
                # the MergeFunction passed by WindowOperator.processElement.
                # Flink throws if the merged window is already late. This can
                # never happen (all windows in the set have cleanup time >
                # watermark and a merge only extends them), EXCEPT through
                # Java long overflow of maxTimestamp + allowedLateness (huge
                # lateness), which we deliberately do not emulate here.
                if merge_result.max_timestamp() + self.allowed_lateness <= self.watermark:
                    raise RuntimeError(
                        "The end timestamp of an event-time window cannot become "
                        "earlier than the current watermark by merging.")
                self.trigger_on_merge(key, merge_result)
                for m in sorted(merged_windows):
                    self.trigger_clear(key, m)
                    self.delete_cleanup_timer(key, m)
                # windowMergingState.mergeNamespaces(target, sources)
                for sw in merged_state_windows:
                    src = self.state.pop((key, sw), None)
                    if src is None:
                        continue
                    tgt = self.state.get((key, state_window_result))
                    if tgt is None:
                        self.state[(key, state_window_result)] = src
                    else:
                        tgt[0] += src[0]
                        tgt[1] += src[1]

            for window in windows:
                actual = mws.add_window(window, merge_function)
                # drop if the window is already late
                if self.is_window_late(actual):
                    mws.retire_window(actual)
                    continue
                is_skipped = False
                state_window = mws.get_state_window(actual)
                if state_window is None:
                    raise RuntimeError("window not in in-flight window set")
                self.add_to_state(key, state_window, amount)
                if self.trigger_on_element(key, actual):
                    acc = self.state.get((key, state_window))
                    if acc is None:
                        continue
                    self.emit(key, actual, acc)
                self.register_cleanup_timer(key, actual)
        else:
            for window in windows:
                # drop if the window is already late
                if self.is_window_late(window):
                    continue
                is_skipped = False
                self.add_to_state(key, window, amount)
                if self.trigger_on_element(key, window):
                    acc = self.state.get((key, window))
                    if acc is None:
                        continue
                    self.emit(key, window, acc)
                self.register_cleanup_timer(key, window)

        # side output: element handled by no window AND ts + lateness <= wm
        if is_skipped and self.is_element_late(ts):
            self.output.append("late,%s,%d,%d" % (key, ts, amount))

    # ---- WindowOperator.onEventTime -----------------------------------------
    def on_event_time(self, time, key, window):
        mws = None
        if self.assigner.merging:
            mws = self.merging_sets.setdefault(key, MergingWindowSet())
            state_window = mws.get_state_window(window)
            if state_window is None:
                # timer for a window that no longer exists: nothing to do
                return
        else:
            state_window = window

        # EventTimeTrigger.onEventTime: FIRE iff time == window.maxTimestamp()
        if time == window.max_timestamp():
            acc = self.state.get((key, state_window))
            if acc is not None:
                self.emit(key, window, acc)

        # isCleanupTime -> clearAllState
        if time == self.cleanup_time(window):
            self.state.pop((key, state_window), None)  # windowState.clear()
            self.trigger_clear(key, window)            # triggerContext.clear()
            if mws is not None:
                mws.retire_window(window)


# --------------------------------------------------------------------------
# Command line / source
# --------------------------------------------------------------------------
def parse_window(spec):
    parts = spec.split(":")
    kind = parts[0]
    nums = [int(p) for p in parts[1:]]
    if kind == "tumbling" and len(nums) in (1, 2):
        return TumblingAssigner(nums[0], nums[1] if len(nums) == 2 else 0)
    if kind == "sliding" and len(nums) == 2:
        return SlidingAssigner(nums[0], nums[1])
    if kind == "session" and len(nums) == 1:
        return SessionAssigner(nums[0])
    raise ValueError("bad window spec: %r" % spec)


def read_events(path):
    events = []
    with open(path, "r", encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\r\n")
            if line.startswith("#") or line.strip() == "":
                continue
            fields = line.split(",")
            if len(fields) != 3:
                raise ValueError("line %d: expected key,timestamp,amount" % lineno)
            key, ts, amount = fields[0], int(fields[1]), int(fields[2])
            for v in (ts, amount):
                if not I64_MIN <= v <= I64_MAX:
                    raise ValueError("line %d: value out of i64 range" % lineno)
            events.append((key, ts, amount))
    return events


def run(events, assigner, out_of_orderness, allowed_lateness):
    if out_of_orderness < 0:
        raise ValueError("out-of-orderness must be >= 0")
    op = WindowOperator(assigner, allowed_lateness)
    max_ts = None
    for key, ts, amount in events:
        # the element is processed against the watermark of the events
        # BEFORE it; its own watermark is emitted afterwards
        op.process_element(key, ts, amount)
        max_ts = ts if max_ts is None else max(max_ts, ts)
        # BoundedOutOfOrdernessWatermarks: maxTimestamp - outOfOrderness - 1.
        # (Python ints: no Java wrap-around for extreme values; a value
        # below i64::MIN simply never advances the watermark.)
        op.advance_watermark(max_ts - out_of_orderness - 1)
    # end of input: Watermark.MAX_WATERMARK
    op.advance_watermark(I64_MAX)
    return sorted(op.output)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--input", required=True)
    p.add_argument("--window", required=True)
    p.add_argument("--out-of-orderness", type=int, required=True)
    p.add_argument("--allowed-lateness", type=int, required=True)
    a = p.parse_args(argv)
    lines = run(read_events(a.input), parse_window(a.window),
                a.out_of_orderness, a.allowed_lateness)
    sys.stdout.write("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    main()
