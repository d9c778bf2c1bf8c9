//! What an interval join runs: the user's [`ProcessJoinFunction`] with its [`JoinContext`], and
//! the keyed co-process function that buffers each input by timestamp and pairs them.

use typeinfo_state::{KeyedBackend, KeyedStateBackend, MapState, MapStateDescriptor};

use crate::error::Result;
use crate::operator::context::{OutputTag, TimeDomain};
use crate::types::{Data, Key};
use crate::user::keyed_process::KeyedContext;
use crate::user::two_input::KeyedCoProcessFunction;

/// What a [`ProcessJoinFunction`] gets with a pair: both timestamps, the key, and where to
/// emit (with the pair's timestamp, the larger of the two).
pub struct JoinContext<'c, 'a, K: Key, O> {
    inner: &'c mut KeyedContext<'a, K, O>,
    left: i64,
    right: i64,
}

impl<K: Key, O> std::fmt::Debug for JoinContext<'_, '_, K, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinContext")
            .field("left", &self.left)
            .field("right", &self.right)
            .finish_non_exhaustive()
    }
}

impl<K: Key, O> JoinContext<'_, '_, K, O> {
    /// The first input's record's timestamp.
    pub fn left_timestamp(&self) -> i64 {
        self.left
    }

    /// The second input's record's timestamp.
    pub fn right_timestamp(&self) -> i64 {
        self.right
    }

    /// The pair's timestamp: the larger of the two.
    pub fn timestamp(&self) -> i64 {
        self.left.max(self.right)
    }

    /// The key both records have.
    pub fn key(&self) -> &K {
        self.inner.key()
    }

    /// Emits `value` with the pair's timestamp.
    pub fn collect(&mut self, value: O) {
        let ts = self.timestamp();
        self.inner.collect_with_timestamp(value, ts);
    }

    /// Emits `value` to the side output `tag`.
    ///
    /// # Errors
    ///
    /// The value cannot be serialized.
    pub fn output<S: Data>(&mut self, tag: &OutputTag<S>, value: S) -> Result<()> {
        self.inner.output(tag, value)
    }
}

/// The function of an interval join, called once per joined pair (Flink's
/// `ProcessJoinFunction`); a closure `|a, b, ctx| ...` is one.
pub trait ProcessJoinFunction<K: Key, A, B, O>: Send + Sync + 'static {
    /// A pair: `left` of the first input, `right` of the second.
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn process_element(
        &mut self,
        left: &A,
        right: &B,
        ctx: &mut JoinContext<'_, '_, K, O>,
    ) -> Result<()>;
}

impl<K: Key, A, B, O, F> ProcessJoinFunction<K, A, B, O> for F
where
    F: Fn(&A, &B, &mut JoinContext<'_, '_, K, O>) -> Result<()> + Send + Sync + 'static,
{
    fn process_element(
        &mut self,
        left: &A,
        right: &B,
        ctx: &mut JoinContext<'_, '_, K, O>,
    ) -> Result<()> {
        self(left, right, ctx)
    }
}

/// An interval join as a keyed co-process function: each input's records wait in map state
/// by timestamp; a cleanup timer per timestamp removes them.
#[derive(Clone)]
pub(crate) struct IntervalJoinFunction<A, B, F> {
    /// Inclusive bounds of `b.ts - a.ts`.
    pub(crate) lower: i64,
    pub(crate) upper: i64,
    pub(crate) function: F,
    pub(crate) first: Option<MapState<(), i64, Vec<A>>>,
    pub(crate) second: Option<MapState<(), i64, Vec<B>>>,
}

impl<A, B, F> IntervalJoinFunction<A, B, F> {
    /// How long after its timestamp a first-input record can still get a partner: it is
    /// removed at its timestamp plus this.
    fn first_reach(&self) -> i64 {
        self.upper.max(0)
    }

    /// How long after its timestamp a second-input record can still get a partner.
    fn second_reach(&self) -> i64 {
        self.lower.saturating_neg().max(0)
    }
}

/// The record's timestamp, or `None` when it is late (behind the watermark) and dropped.
fn on_time<K: Key, O>(ctx: &KeyedContext<'_, K, O>) -> Result<Option<i64>> {
    let ts = ctx.timestamp().ok_or_else(|| {
        crate::error::Error::function(
            "an interval join needs records with timestamps (assign them first)",
        )
    })?;
    let watermark = ctx.current_watermark();
    Ok((watermark == i64::MIN || ts >= watermark).then_some(ts))
}

/// Adds `value` at `ts` to `buffer`; returns the other buffer's records with timestamps in
/// `lo..=hi`.
fn buffer_and_match<K: Key, O, T: Data, U: Data>(
    ctx: &mut KeyedContext<'_, K, O>,
    buffer: &MapState<(), i64, Vec<T>>,
    value: &T,
    ts: i64,
    other: &MapState<(), i64, Vec<U>>,
    (lo, hi): (i64, i64),
) -> Result<Vec<(i64, U)>> {
    let mut bucket = buffer.get(ctx.state(), &(), &ts)?.unwrap_or_default();
    bucket.push(value.clone());
    buffer.put(ctx.state(), &(), ts, bucket)?;
    let mut partners = Vec::new();
    for entry in other.iter(ctx.state(), &())? {
        let (at, records) = entry?;
        if at > hi {
            break; // in timestamp order
        }
        if at >= lo {
            partners.extend(records.into_iter().map(|r| (at, r)));
        }
    }
    Ok(partners)
}

impl<K, A, B, O, F> KeyedCoProcessFunction<K, A, B, O> for IntervalJoinFunction<A, B, F>
where
    K: Key,
    A: Data,
    B: Data,
    F: ProcessJoinFunction<K, A, B, O> + Clone,
{
    fn open(&mut self, state: &mut KeyedBackend<K>) -> Result<()> {
        if self.lower > self.upper {
            return Err(crate::error::Error::Config(format!(
                "an interval join's lower bound must not exceed its upper bound (got {} > {} ms, exclusive bounds applied)",
                self.lower, self.upper
            )));
        }
        self.first = Some(state.map_state(&MapStateDescriptor::new("interval-join-first"))?);
        self.second = Some(state.map_state(&MapStateDescriptor::new("interval-join-second"))?);
        Ok(())
    }

    fn process_element1(&mut self, a: A, ctx: &mut KeyedContext<'_, K, O>) -> Result<()> {
        let (Some(first), Some(second)) = (&self.first, &self.second) else {
            return Err(crate::error::Error::function(
                "an interval join was not opened",
            ));
        };
        let Some(ts) = on_time(ctx)? else {
            return Ok(());
        };
        let range = (ts.saturating_add(self.lower), ts.saturating_add(self.upper));
        let partners = buffer_and_match(ctx, first, &a, ts, second, range)?;
        for (at, b) in partners {
            let mut join = JoinContext {
                inner: ctx,
                left: ts,
                right: at,
            };
            self.function.process_element(&a, &b, &mut join)?;
        }
        ctx.register_event_time_timer(ts.saturating_add(self.first_reach()));
        Ok(())
    }

    fn process_element2(&mut self, b: B, ctx: &mut KeyedContext<'_, K, O>) -> Result<()> {
        let (Some(first), Some(second)) = (&self.first, &self.second) else {
            return Err(crate::error::Error::function(
                "an interval join was not opened",
            ));
        };
        let Some(ts) = on_time(ctx)? else {
            return Ok(());
        };
        let range = (ts.saturating_sub(self.upper), ts.saturating_sub(self.lower));
        let partners = buffer_and_match(ctx, second, &b, ts, first, range)?;
        for (at, a) in partners {
            let mut join = JoinContext {
                inner: ctx,
                left: at,
                right: ts,
            };
            self.function.process_element(&a, &b, &mut join)?;
        }
        ctx.register_event_time_timer(ts.saturating_add(self.second_reach()));
        Ok(())
    }

    /// Removes the records whose cleanup time is `time`, of either input (a record's
    /// cleanup time is its timestamp plus a constant per input, so each timer names one
    /// timestamp per input).
    fn on_timer(
        &mut self,
        time: i64,
        _domain: TimeDomain,
        ctx: &mut KeyedContext<'_, K, O>,
    ) -> Result<()> {
        if let Some(first) = &self.first {
            first.remove(ctx.state(), &(), &time.saturating_sub(self.first_reach()))?;
        }
        if let Some(second) = &self.second {
            second.remove(ctx.state(), &(), &time.saturating_sub(self.second_reach()))?;
        }
        Ok(())
    }
}
