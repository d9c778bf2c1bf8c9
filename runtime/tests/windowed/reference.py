#!/usr/bin/env python3
"""Independent reference implementation of Apache Flink's keyed window
semantics for the `windowed_aggregate` command-line contract.

Usage:
    python3 reference.py --input FILE --window SPEC \
        --out-of-orderness MS --allowed-lateness MS \
        [--trigger TSPEC] [--evictor ESPEC] [--parallelism N] [--state S]

SPEC is one of
    tumbling:SIZE[:OFFSET]   TumblingEventTimeWindows.of(size, offset)
    sliding:SIZE:SLIDE       SlidingEventTimeWindows.of(size, slide)  (offset 0)
    session:GAP              EventTimeSessionWindows.withGap(gap)
    count:N                  KeyedStream.countWindow(N): GlobalWindows +
                             PurgingTrigger.of(CountTrigger.of(N))
    count:N:SLIDE            KeyedStream.countWindow(N, SLIDE): GlobalWindows +
                             CountEvictor.of(N) + CountTrigger.of(SLIDE)
TSPEC (replaces the window's trigger, as WindowedStream.trigger does):
    count:N                  CountTrigger.of(N)
    purging-count:N          PurgingTrigger.of(CountTrigger.of(N))
    continuous-event:MS      ContinuousEventTimeTrigger.of(MS)
ESPEC (replaces the window's evictor, as WindowedStream.evictor does; the
evictor then runs before the function, Flink's default):
    count:N                  CountEvictor.of(N)
    time:MS                  TimeEvictor.of(MS)
--parallelism and --state do not change the output and are ignored.

Input: CSV lines `key,timestamp_ms,amount`; lines starting with '#' and
empty lines are skipped. One source reads the file in order; after every
event it emits the watermark `max_ts_so_far - out_of_orderness - 1`
(BoundedOutOfOrdernessWatermarks.onEvent/onPeriodicEmit formula, emitted
after each event); watermarks that do not advance are ignored (the
operator's timer service only moves forward); end of input emits
Long.MAX_VALUE.

Output (printed sorted, as Python's sorted() on str):
    window,KEY,START,END,COUNT,SUM   one line per window firing
                                     (START,END = -,- for the GlobalWindow)
    late,KEY,TIMESTAMP,AMOUNT        one line per late element (side output)

The structure mirrors Flink's classes so each rule can be traced to its
source:
  * TimeWindow.getWindowStartWithOffset / TimeWindow.mergeWindows /
    TimeWindow.intersects / TimeWindow.cover / TimeWindow.maxTimestamp
  * GlobalWindow / GlobalWindows (isEventTime() == false)
  * TumblingEventTimeWindows / SlidingEventTimeWindows /
    EventTimeSessionWindows / GlobalWindows .assignWindows
  * MergingWindowSet.addWindow / retireWindow / getStateWindow
  * WindowOperator.processElement / onEventTime / isWindowLate /
    isElementLate / cleanupTime / registerCleanupTimer / deleteCleanupTimer /
    clearAllState and the merge function passed to addWindow
  * EvictingWindowOperator.processElement / onEventTime /
    emitWindowContents (evictor, then the function, then the remaining
    elements are written back to the window state)
  * EventTimeTrigger, CountTrigger, PurgingTrigger,
    ContinuousEventTimeTrigger (Flink 2.x version), GlobalWindows.NeverTrigger
    .onElement / onEventTime / onMerge / clear
  * CountEvictor / TimeEvictor .evictBefore
  * InternalTimerServiceImpl.advanceWatermark (timers are a set keyed by
    (timestamp, key, namespace); registering an existing timer is a no-op;
    a timer registered while timers fire fires in the same advance if it is
    not after the new watermark)

Only the Python standard library is used. Integers are Python ints; the
only places where Java long arithmetic is emulated are cleanupTime (clamped
to Long.MAX_VALUE, exactly as Flink does) and the truncated remainder `%` of
ContinuousEventTimeTrigger.
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
    event_time = True

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

    def default_trigger(self):
        # TumblingEventTimeWindows.getDefaultTrigger()
        return EventTimeTrigger()


class SlidingAssigner:
    merging = False
    event_time = True

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

    def default_trigger(self):
        # SlidingEventTimeWindows.getDefaultTrigger()
        return EventTimeTrigger()


class SessionAssigner:
    merging = True
    event_time = True

    def __init__(self, gap):
        if gap <= 0:
            raise ValueError("session gap must be > 0")
        self.gap = gap

    def assign(self, ts):
        # EventTimeSessionWindows.assignWindows: [ts, ts + gap)
        return [TimeWindow(ts, ts + self.gap)]

    def default_trigger(self):
        # EventTimeSessionWindows.getDefaultTrigger()
        return EventTimeTrigger()


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
# GlobalWindow / GlobalWindows
# --------------------------------------------------------------------------
class GlobalWindow:
    """GlobalWindow.get(): the one window of GlobalWindows; printed as `-,-`.
    GlobalWindow.maxTimestamp() is Long.MAX_VALUE."""

    __slots__ = ()

    def max_timestamp(self):
        return I64_MAX

    def __lt__(self, other):
        return False  # only one instance exists

    def __repr__(self):
        return "GlobalWindow"


GLOBAL_WINDOW = GlobalWindow()


class GlobalAssigner:
    """GlobalWindows.create(). isEventTime() is FALSE for GlobalWindows, so in
    WindowOperator nothing is ever late (isWindowLate / isElementLate are
    false), cleanupTime(window) = window.maxTimestamp() = Long.MAX_VALUE and
    registerCleanupTimer sets no timer: a GlobalWindow's state lives forever
    and is never flushed at the end of the input."""
    merging = False
    event_time = False

    def assign(self, ts):
        # GlobalWindows.assignWindows: singletonList(GlobalWindow.get())
        return [GLOBAL_WINDOW]

    def default_trigger(self):
        # GlobalWindows.create() -> NeverTrigger
        return NeverTrigger()


# --------------------------------------------------------------------------
# Triggers
# --------------------------------------------------------------------------
# TriggerResult: (isFire, isPurge)
CONTINUE = (False, False)
FIRE = (True, False)
FIRE_AND_PURGE = (True, True)


class TriggerContext:
    """WindowOperator.Context for one (key, window): partitioned trigger state
    (namespace = the actual window, NOT the state window), event-time timers
    and the current watermark. Also serves as the OnMergeContext."""

    def __init__(self, op, key, window):
        self.op = op
        self.key = key
        self.window = window

    @property
    def current_watermark(self):
        return self.op.watermark

    def register_event_time_timer(self, time):
        self.op.register_timer(time, self.key, self.window)

    def delete_event_time_timer(self, time):
        self.op.delete_timer(time, self.key, self.window)

    # a ReducingState<Long> identified by its descriptor name; absent == null
    def get(self, name):
        return self.op.trigger_state.get((name, self.key, self.window))

    def add(self, name, value, reduce):
        # ReducingState.add: value if empty, else reduce(current, value)
        k = (name, self.key, self.window)
        cur = self.op.trigger_state.get(k)
        self.op.trigger_state[k] = value if cur is None else reduce(cur, value)

    def clear_state(self, name):
        self.op.trigger_state.pop((name, self.key, self.window), None)

    def merge_partitioned_state(self, name, reduce, merged_windows):
        # OnMergeContext.mergePartitionedState ->
        # InternalMergingState.mergeNamespaces(this window, mergedWindows):
        # every source namespace is removed and reduced into the target
        # (the target's own value, if any, first).
        for m in sorted(merged_windows):
            v = self.op.trigger_state.pop((name, self.key, m), None)
            if v is not None:
                self.add(name, v, reduce)


class EventTimeTrigger:
    """The default trigger of the event-time assigners."""

    def on_element(self, ts, window, ctx):
        # EventTimeTrigger.onElement
        if window.max_timestamp() <= ctx.current_watermark:
            return FIRE  # the watermark is already past the window
        ctx.register_event_time_timer(window.max_timestamp())
        return CONTINUE

    def on_event_time(self, time, window, ctx):
        # EventTimeTrigger.onEventTime
        return FIRE if time == window.max_timestamp() else CONTINUE

    def on_merge(self, window, ctx, merged_windows):
        # EventTimeTrigger.onMerge: only register if not yet past the end
        # (otherwise onElement fires, a timer here would fire twice)
        if window.max_timestamp() > ctx.current_watermark:
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window, ctx):
        # EventTimeTrigger.clear: deleteEventTimeTimer(window.maxTimestamp())
        ctx.delete_event_time_timer(window.max_timestamp())


class NeverTrigger:
    """GlobalWindows.NeverTrigger: CONTINUE on everything, no state."""

    def on_element(self, ts, window, ctx):
        return CONTINUE

    def on_event_time(self, time, window, ctx):
        return CONTINUE

    def on_merge(self, window, ctx, merged_windows):
        pass

    def clear(self, window, ctx):
        pass


def _sum(a, b):
    return a + b


class CountTrigger:
    """CountTrigger.of(maxCount): a ReducingState<Long> "count" (Sum) per
    window. It never registers timers, so an event-time window with this
    trigger does NOT fire when the watermark passes its end; the cleanup
    timer of WindowOperator still drops it at maxTimestamp + lateness."""

    def __init__(self, max_count):
        self.max_count = max_count

    def on_element(self, ts, window, ctx):
        # CountTrigger.onElement: count.add(1); if count >= maxCount:
        # count.clear(), FIRE
        ctx.add("count", 1, _sum)
        if ctx.get("count") >= self.max_count:
            ctx.clear_state("count")
            return FIRE
        return CONTINUE

    def on_event_time(self, time, window, ctx):
        return CONTINUE  # CountTrigger.onEventTime

    def on_merge(self, window, ctx, merged_windows):
        # CountTrigger.onMerge: ctx.mergePartitionedState(stateDesc) -- the
        # counts of the merged windows are summed into the merged window
        ctx.merge_partitioned_state("count", _sum, merged_windows)

    def clear(self, window, ctx):
        ctx.clear_state("count")  # CountTrigger.clear


class PurgingTrigger:
    """PurgingTrigger.of(nested): FIRE of the nested trigger becomes
    FIRE_AND_PURGE; clear / onMerge are delegated."""

    def __init__(self, nested):
        self.nested = nested

    def on_element(self, ts, window, ctx):
        r = self.nested.on_element(ts, window, ctx)
        return FIRE_AND_PURGE if r[0] else r

    def on_event_time(self, time, window, ctx):
        r = self.nested.on_event_time(time, window, ctx)
        return FIRE_AND_PURGE if r[0] else r

    def on_merge(self, window, ctx, merged_windows):
        self.nested.on_merge(window, ctx, merged_windows)

    def clear(self, window, ctx):
        self.nested.clear(window, ctx)


def java_rem(a, b):
    """Java's long `%`: the remainder truncates toward zero (sign of a)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _min(a, b):
    return min(a, b)


class ContinuousEventTimeTrigger:
    """ContinuousEventTimeTrigger.of(interval), Flink 2.x: it fires at the
    window's maxTimestamp like EventTimeTrigger and, in between, every
    `interval` at a "fire-time" kept in a ReducingState<Long> (Min)."""

    def __init__(self, interval):
        if interval <= 0:
            raise ValueError("continuous-event interval must be > 0")
        self.interval = interval

    def _register_next_fire_timestamp(self, time, window, ctx):
        # registerNextFireTimestamp: min(time + interval, maxTimestamp)
        nxt = min(time + self.interval, window.max_timestamp())
        ctx.add("fire-time", nxt, _min)
        ctx.register_event_time_timer(nxt)

    def on_element(self, ts, window, ctx):
        # ContinuousEventTimeTrigger.onElement
        if window.max_timestamp() <= ctx.current_watermark:
            return FIRE  # no state, no timer
        ctx.register_event_time_timer(window.max_timestamp())
        if ctx.get("fire-time") is None:
            # start = timestamp - (timestamp % interval), Java remainder
            self._register_next_fire_timestamp(
                ts - java_rem(ts, self.interval), window, ctx)
        return CONTINUE

    def on_event_time(self, time, window, ctx):
        # ContinuousEventTimeTrigger.onEventTime
        if time == window.max_timestamp():
            return FIRE  # the fire-time state is left as it is
        fire_ts = ctx.get("fire-time")
        if fire_ts is not None and fire_ts == time:
            ctx.clear_state("fire-time")
            self._register_next_fire_timestamp(time, window, ctx)
            return FIRE
        return CONTINUE

    def on_merge(self, window, ctx, merged_windows):
        # ContinuousEventTimeTrigger.onMerge: merge the fire-times (Min) and
        # register a timer at the result -- even if it is behind the
        # watermark (then it fires at the next watermark advance). The
        # maxTimestamp timer of the merged window is NOT registered here
        # (onElement of the same element does it).
        ctx.merge_partitioned_state("fire-time", _min, merged_windows)
        nxt = ctx.get("fire-time")
        if nxt is not None:
            ctx.register_event_time_timer(nxt)

    def clear(self, window, ctx):
        # ContinuousEventTimeTrigger.clear: deletes the fire-time timer only
        # (not the maxTimestamp timer). For a window merged away, its
        # fire-time was already moved by onMerge, so nothing is deleted and
        # its old timers later fire for a window that no longer exists
        # (WindowOperator.onEventTime ignores those).
        fire_ts = ctx.get("fire-time")
        if fire_ts is not None:
            ctx.delete_event_time_timer(fire_ts)
            ctx.clear_state("fire-time")


# --------------------------------------------------------------------------
# Evictors (evictBefore; the elements are (timestamp, amount) in the order of
# the window's ListState)
# --------------------------------------------------------------------------
class CountEvictor:
    """CountEvictor.of(maxCount): keeps the LAST maxCount elements in list
    (arrival) order."""

    order_sensitive = True

    def __init__(self, max_count):
        self.max_count = max_count

    def evict_before(self, elements):
        # CountEvictor.evict: if size <= maxCount return; otherwise remove
        # the first size - maxCount elements through the iterator
        size = len(elements)
        if size <= self.max_count:
            return elements
        return elements[size - self.max_count:]


class TimeEvictor:
    """TimeEvictor.of(windowSize): removes every element whose timestamp is
    <= (max timestamp of the elements) - windowSize."""

    order_sensitive = False

    def __init__(self, window_size):
        self.window_size = window_size

    def evict_before(self, elements):
        # TimeEvictor.evict: hasTimestamp (first element) / getMaxTimestamp
        if not elements:
            return elements
        evict_cutoff = max(ts for ts, _ in elements) - self.window_size
        return [e for e in elements if e[0] > evict_cutoff]


# --------------------------------------------------------------------------
# WindowOperator / EvictingWindowOperator with an AggregateFunction
# (count, sum) and a ProcessWindowFunction printing the window
# --------------------------------------------------------------------------
class WindowOperator:
    def __init__(self, assigner, allowed_lateness, trigger=None, evictor=None):
        if allowed_lateness < 0:
            raise ValueError("allowed lateness must be >= 0")
        self.assigner = assigner
        self.allowed_lateness = allowed_lateness
        # WindowedStream: the assigner's default trigger unless replaced
        self.trigger = trigger if trigger is not None else assigner.default_trigger()
        if (isinstance(assigner, GlobalAssigner)
                and isinstance(self.trigger, ContinuousEventTimeTrigger)):
            # GlobalWindow.maxTimestamp() is Long.MAX_VALUE: at the final
            # MAX watermark every fire-time timer registers the next one at
            # min(t + interval, MAX) <= the watermark, which fires in the same
            # advance -- about 2^63 / interval firings; Flink does not finish.
            raise ValueError("continuous-event trigger on count windows never ends")
        # an evictor makes it an EvictingWindowOperator
        self.evictor = evictor
        if evictor is not None and assigner.merging and evictor.order_sensitive:
            # EvictingWindowOperator merges the ListStates of merged windows in
            # the iteration order of a HashSet of windows
            # (MergingWindowSet.addWindow / TimeWindow.mergeWindows), which
            # decides which elements a CountEvictor keeps; not modelled.
            raise NotImplementedError("count evictor with merging windows")
        # InternalTimerService.currentWatermark starts at Long.MIN_VALUE
        self.watermark = I64_MIN
        # windowState: (key, state_window) -> [count, sum] (AggregatingState)
        # or, with an evictor, a list of (timestamp, amount) (ListState);
        # absent == null
        self.state = {}
        # trigger state: (descriptor name, key, window) -> value
        self.trigger_state = {}
        # event-time timers: a SET of (timestamp, key, window), plus a heap
        # with lazy deletion for ordered firing
        self.timers = set()
        self.timer_heap = []
        # per-key MergingWindowSet (merging assigners only)
        self.merging_sets = {}
        self.output = []
        # batch mode: registrations dropped while a key's timers fire
        self.quiesced = False

    # ---- timer service ---------------------------------------------------
    def register_timer(self, time, key, window):
        if self.quiesced:
            # BatchExecutionInternalTimeService: a timer registered while the
            # key's timers fire at its end (watermark == MAX) is dropped
            return
        t = (time, key, window)
        if t not in self.timers:  # timers are deduplicated
            self.timers.add(t)
            heapq.heappush(self.timer_heap, t)

    def delete_timer(self, time, key, window):
        self.timers.discard((time, key, window))

    def advance_watermark(self, wm):
        # InternalTimerServiceImpl.advanceWatermark: set currentWatermark
        # first, then fire every timer with timestamp <= wm in time order
        # (including timers registered by the firing ones).
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
        # WindowOperator.cleanupTime: event time: maxTimestamp +
        # allowedLateness, Long.MAX_VALUE if that overflows; otherwise
        # (GlobalWindows) window.maxTimestamp().
        if not self.assigner.event_time:
            return window.max_timestamp()
        c = window.max_timestamp() + self.allowed_lateness
        return c if c <= I64_MAX else I64_MAX

    def is_window_late(self, window):
        # WindowOperator.isWindowLate: isEventTime && cleanupTime <= watermark
        return self.assigner.event_time and self.cleanup_time(window) <= self.watermark

    def is_element_late(self, ts):
        # WindowOperator.isElementLate: isEventTime &&
        # ts + allowedLateness <= currentWatermark
        return self.assigner.event_time and ts + self.allowed_lateness <= self.watermark

    def register_cleanup_timer(self, key, window):
        # WindowOperator.registerCleanupTimer: no GC timer for "end of time"
        c = self.cleanup_time(window)
        if c == I64_MAX:
            return
        if not self.assigner.event_time:
            raise NotImplementedError("processing-time cleanup timer")
        self.register_timer(c, key, window)

    def delete_cleanup_timer(self, key, window):
        # WindowOperator.deleteCleanupTimer
        c = self.cleanup_time(window)
        if c == I64_MAX:
            return
        self.delete_timer(c, key, window)

    def ctx(self, key, window):
        return TriggerContext(self, key, window)

    # ---- window state -----------------------------------------------------
    def add_to_state(self, key, state_window, ts, amount):
        if self.evictor is not None:
            # ListState<StreamRecord>.add
            self.state.setdefault((key, state_window), []).append((ts, amount))
            return
        # AggregatingState.add (createAccumulator if null)
        acc = self.state.get((key, state_window))
        if acc is None:
            acc = [0, 0]
            self.state[(key, state_window)] = acc
        acc[0] += 1
        acc[1] += amount

    def merge_state_namespaces(self, key, target, sources):
        # windowMergingState.mergeNamespaces(target, sources): each source is
        # removed and merged into the target (AggregateFunction.merge, or
        # list concatenation for the evicting ListState)
        for sw in sources:
            src = self.state.pop((key, sw), None)
            if src is None:
                continue
            tgt = self.state.get((key, target))
            if tgt is None:
                self.state[(key, target)] = src
            elif self.evictor is not None:
                tgt.extend(src)
            else:
                tgt[0] += src[0]
                tgt[1] += src[1]

    def emit(self, key, window, state_window, contents):
        if self.evictor is not None:
            # EvictingWindowOperator.emitWindowContents: evictBefore, the
            # function over the remaining elements, (evictAfter: no-op for
            # these evictors), then windowState.update(remaining) -- the
            # evicted elements are gone from the state (FLINK-4369); an
            # empty update clears the state.
            remaining = self.evictor.evict_before(list(contents))
            acc = [len(remaining), sum(a for _, a in remaining)]
            if remaining:
                self.state[(key, state_window)] = remaining
            else:
                self.state.pop((key, state_window), None)
        else:
            acc = contents
        # the *actual* (possibly merged) window is emitted
        if isinstance(window, GlobalWindow):
            bounds = "-,-"
        else:
            bounds = "%d,%d" % (window.start, window.end)
        self.output.append("window,%s,%s,%d,%d" % (key, bounds, acc[0], acc[1]))

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
                if (self.assigner.event_time and merge_result.max_timestamp()
                        + self.allowed_lateness <= self.watermark):
                    raise RuntimeError(
                        "The end timestamp of an event-time window cannot become "
                        "earlier than the current watermark by merging.")
                # triggerContext.onMerge(mergedWindows) on the merge result
                self.trigger.on_merge(merge_result, self.ctx(key, merge_result),
                                      merged_windows)
                for m in sorted(merged_windows):
                    self.trigger.clear(m, self.ctx(key, m))
                    self.delete_cleanup_timer(key, m)
                self.merge_state_namespaces(key, state_window_result,
                                            merged_state_windows)

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
                if not self.window_element(key, ts, amount, actual, state_window):
                    continue
                self.register_cleanup_timer(key, actual)
        else:
            for window in windows:
                # drop if the window is already late
                if self.is_window_late(window):
                    continue
                is_skipped = False
                if not self.window_element(key, ts, amount, window, window):
                    continue
                self.register_cleanup_timer(key, window)

        # side output: element handled by no window AND it is late
        if is_skipped and self.is_element_late(ts):
            self.output.append("late,%s,%d,%d" % (key, ts, amount))

    def window_element(self, key, ts, amount, window, state_window):
        """The common middle of both loops of processElement: add to the
        window state, ask the trigger, fire / purge. Returns False where
        EvictingWindowOperator `continue`s (fired with no contents), which
        skips registerCleanupTimer."""
        self.add_to_state(key, state_window, ts, amount)
        fire, purge = self.trigger.on_element(ts, window, self.ctx(key, window))
        if fire:
            contents = self.state.get((key, state_window))
            if contents is None:
                if self.evictor is not None:
                    return False  # EvictingWindowOperator: "continue"
            else:
                self.emit(key, window, state_window, contents)
        if purge:
            self.state.pop((key, state_window), None)  # windowState.clear()
        return True

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

        fire, purge = self.trigger.on_event_time(time, window, self.ctx(key, window))
        if fire:
            contents = self.state.get((key, state_window))
            if contents is not None:
                self.emit(key, window, state_window, contents)
        if purge:
            self.state.pop((key, state_window), None)

        # isCleanupTime -> clearAllState (event-time assigners only)
        if self.assigner.event_time and time == self.cleanup_time(window):
            self.state.pop((key, state_window), None)    # windowState.clear()
            self.trigger.clear(window, self.ctx(key, window))  # triggerContext.clear()
            if mws is not None:
                mws.retire_window(window)


# --------------------------------------------------------------------------
# Command line / source
# --------------------------------------------------------------------------
def parse_window(spec):
    """The assigner of --window SPEC (for count:N[:SLIDE] see parse_setup)."""
    parts = spec.split(":")
    kind = parts[0]
    nums = [int(p) for p in parts[1:]]
    if kind == "tumbling" and len(nums) in (1, 2):
        return TumblingAssigner(nums[0], nums[1] if len(nums) == 2 else 0)
    if kind == "sliding" and len(nums) == 2:
        return SlidingAssigner(nums[0], nums[1])
    if kind == "session" and len(nums) == 1:
        return SessionAssigner(nums[0])
    if kind == "count" and len(nums) in (1, 2):
        return GlobalAssigner()
    raise ValueError("bad window spec: %r" % spec)


def parse_setup(window_spec, trigger_spec=None, evictor_spec=None):
    """(assigner, trigger or None, evictor or None) as the DataStream API
    builds them: KeyedStream.countWindow sets a trigger (and an evictor),
    then --trigger / --evictor replace them like WindowedStream.trigger /
    .evictor called afterwards."""
    assigner = parse_window(window_spec)
    trigger = evictor = None
    parts = window_spec.split(":")
    if parts[0] == "count":
        nums = [int(p) for p in parts[1:]]
        if len(nums) == 1:
            # KeyedStream.countWindow(size)
            trigger = PurgingTrigger(CountTrigger(nums[0]))
        else:
            # KeyedStream.countWindow(size, slide)
            evictor = CountEvictor(nums[0])
            trigger = CountTrigger(nums[1])
    if trigger_spec is not None:
        kind, _, n = trigger_spec.partition(":")
        if kind == "count":
            trigger = CountTrigger(int(n))
        elif kind == "purging-count":
            trigger = PurgingTrigger(CountTrigger(int(n)))
        elif kind == "continuous-event":
            trigger = ContinuousEventTimeTrigger(int(n))
        else:
            raise ValueError("bad trigger spec: %r" % trigger_spec)
    if evictor_spec is not None:
        kind, _, n = evictor_spec.partition(":")
        if kind == "count":
            evictor = CountEvictor(int(n))
        elif kind == "time":
            evictor = TimeEvictor(int(n))
        else:
            raise ValueError("bad evictor spec: %r" % evictor_spec)
    return assigner, trigger, evictor


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


def run(events, assigner, out_of_orderness, allowed_lateness, trigger=None,
        evictor=None):
    if out_of_orderness < 0:
        raise ValueError("out-of-orderness must be >= 0")
    op = WindowOperator(assigner, allowed_lateness, trigger, evictor)
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


def run_batch(events, assigner, allowed_lateness, trigger=None, evictor=None):
    """Flink's BATCH execution mode: the keyed input sorted by key, then by
    timestamp (a stable sort: file order among equal timestamps); each key runs
    on its own state (single-key state backend) with the watermark at
    Long.MIN_VALUE (no watermark reaches the operator before the end: nothing
    is late), and at the key's end BatchExecutionInternalTimeService sets the
    watermark to Long.MAX_VALUE and fires every timer of the key, dropping the
    timers those firings register."""
    by_key = {}
    for key, ts, amount in events:
        by_key.setdefault(key, []).append((key, ts, amount))
    output = []
    for key in sorted(by_key):
        op = WindowOperator(assigner, allowed_lateness, trigger, evictor)
        for k, ts, amount in sorted(by_key[key], key=lambda e: e[1]):
            op.process_element(k, ts, amount)
        op.quiesced = True
        op.watermark = I64_MAX
        while op.timer_heap:
            t = heapq.heappop(op.timer_heap)
            if t not in op.timers:
                continue  # deleted timer
            op.timers.discard(t)
            op.on_event_time(*t)
        output.extend(op.output)
    return sorted(output)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--input", required=True)
    p.add_argument("--window", required=True)
    p.add_argument("--out-of-orderness", type=int, required=True)
    p.add_argument("--allowed-lateness", type=int, required=True)
    p.add_argument("--trigger")
    p.add_argument("--evictor")
    p.add_argument("--parallelism")  # no influence on the output
    p.add_argument("--state")  # no influence on the output
    p.add_argument("--mode", choices=["streaming", "batch"], default="streaming")
    a = p.parse_args(argv)
    assigner, trigger, evictor = parse_setup(a.window, a.trigger, a.evictor)
    if a.mode == "batch":
        lines = run_batch(read_events(a.input), assigner, a.allowed_lateness,
                          trigger, evictor)
    else:
        lines = run(read_events(a.input), assigner, a.out_of_orderness,
                    a.allowed_lateness, trigger, evictor)
    sys.stdout.write("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    main()
