//! [`IntervalJoin`]: the builder of `a.interval_join(&b).between(lo, hi)` on two keyed streams.

use crate::api::handles::{DataStream, IntervalJoin};
use crate::types::{Data, Key};
use crate::user::interval_join::{IntervalJoinFunction, ProcessJoinFunction};
use crate::user::two_input::KeyedCoProcess;

impl<K: Key, A: Data, B: Data> std::fmt::Debug for IntervalJoin<K, A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntervalJoin")
            .field("lower", &self.lower)
            .field("upper", &self.upper)
            .field("lower_exclusive", &self.lower_exclusive)
            .field("upper_exclusive", &self.upper_exclusive)
            .finish_non_exhaustive()
    }
}

impl<K: Key, A: Data, B: Data> IntervalJoin<K, A, B> {
    /// The interval, in milliseconds relative to the first input's record (bounds
    /// inclusive; `lower` must not exceed `upper`, or the job fails when it starts).
    pub fn between(mut self, lower_ms: i64, upper_ms: i64) -> Self {
        self.lower = lower_ms;
        self.upper = upper_ms;
        self
    }

    /// Excludes the lower bound (`a.ts + lower < b.ts`).
    pub fn lower_bound_exclusive(mut self) -> Self {
        self.lower_exclusive = true;
        self
    }

    /// Excludes the upper bound (`b.ts < a.ts + upper`).
    pub fn upper_bound_exclusive(mut self) -> Self {
        self.upper_exclusive = true;
        self
    }

    /// Runs `function` on every joined pair.
    pub fn process<O: Data, F: ProcessJoinFunction<K, A, B, O> + Clone>(
        &self,
        function: F,
    ) -> DataStream<O> {
        let lower = self.lower.saturating_add(i64::from(self.lower_exclusive));
        let upper = self.upper.saturating_sub(i64::from(self.upper_exclusive));
        self.keyed
            .tagged()
            .process(KeyedCoProcess(IntervalJoinFunction {
                lower,
                upper,
                function,
                first: None,
                second: None,
            }))
            .name("Interval Join")
    }
}
