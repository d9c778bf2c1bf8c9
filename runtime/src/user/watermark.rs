//! Event timestamps and watermarks: [`WatermarkStrategy`] and the operator that applies it.
//!
//! The bounded out-of-orderness generator keeps the highest timestamp seen and emits the
//! watermark `max_timestamp - out_of_orderness - 1` (Flink's `BoundedOutOfOrdernessWatermarks`);
//! monotonous timestamps are the special case of zero out-of-orderness. A strategy emits
//! either after every event (a watermark is sent only when it advances) or periodically.
//! Periodically means after every input batch (at most 1024 records) by default, or at most
//! once per `auto_watermark_interval` of processing time when the job sets one (Flink's
//! behaviour, 200 ms there). Following the batches keeps windows firing as data flows: at
//! millions of records per second a 200 ms interval holds back ten seconds of event time, and
//! all of its window state. Watermarks arriving from upstream are dropped, except the maximal
//! watermark that ends a bounded input.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::operator::contract::{now_ms, Operator, Outputs};
use crate::operator::element::NO_TIMESTAMP;

/// When a strategy emits its watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emission {
    /// After every event whose timestamp advances the watermark.
    PerEvent,
    /// Every `auto_watermark_interval` of processing time.
    Periodic,
}

/// How a stream's records get event timestamps and how watermarks are generated.
pub struct WatermarkStrategy<T> {
    out_of_orderness: Option<i64>,
    /// A split or input without records for this long is idle (ms).
    idleness: Option<i64>,
    #[allow(clippy::type_complexity)] // the user's timestamp assigner
    assigner: Option<Arc<dyn Fn(&T, i64) -> i64 + Send + Sync>>,
    emission: Emission,
}

impl<T> Clone for WatermarkStrategy<T> {
    fn clone(&self) -> Self {
        WatermarkStrategy {
            out_of_orderness: self.out_of_orderness,
            idleness: self.idleness,
            assigner: self.assigner.clone(),
            emission: self.emission,
        }
    }
}

impl<T> std::fmt::Debug for WatermarkStrategy<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatermarkStrategy")
            .field("out_of_orderness_ms", &self.out_of_orderness)
            .field("idleness_ms", &self.idleness)
            .field("timestamp_assigner", &self.assigner.is_some())
            .field("emission", &self.emission)
            .finish()
    }
}

impl<T> WatermarkStrategy<T> {
    /// Watermarks that trail the highest timestamp seen by `max_out_of_orderness`.
    pub fn for_bounded_out_of_orderness(max_out_of_orderness: Duration) -> Self {
        Self::for_bounded_out_of_orderness_millis(
            max_out_of_orderness.as_millis().min(i64::MAX as u128) as i64,
        )
    }

    /// As [`for_bounded_out_of_orderness`](Self::for_bounded_out_of_orderness), in milliseconds.
    pub fn for_bounded_out_of_orderness_millis(max_out_of_orderness_ms: i64) -> Self {
        WatermarkStrategy {
            out_of_orderness: Some(max_out_of_orderness_ms.max(0)),
            idleness: None,
            assigner: None,
            emission: Emission::Periodic,
        }
    }

    /// Watermarks for ascending timestamps: the highest timestamp seen, minus one.
    pub fn for_monotonous_timestamps() -> Self {
        Self::for_bounded_out_of_orderness_millis(0)
    }

    /// Timestamps only, no watermarks (except the maximal one at the end of a bounded input).
    pub fn no_watermarks() -> Self {
        WatermarkStrategy {
            out_of_orderness: None,
            idleness: None,
            assigner: None,
            emission: Emission::Periodic,
        }
    }

    /// Takes each record's timestamp from `assigner(record, previous timestamp)`.
    pub fn with_timestamp_assigner(
        mut self,
        assigner: impl Fn(&T, i64) -> i64 + Send + Sync + 'static,
    ) -> Self {
        self.assigner = Some(Arc::new(assigner));
        self
    }

    /// Marks a split of a [`Source`](crate::sort::Source) idle when it produced no record for
    /// `timeout`: it stops holding back the watermark, and a subtask whose splits are all
    /// idle tells its consumers so (Flink's `withIdleness`). It rejoins with its next record.
    /// Applies where watermarks are generated per split, in
    /// [`from_source`](crate::api::handles::StreamExecutionEnvironment::from_source).
    ///
    /// # Examples
    ///
    /// Split 0 has events at 1, 2 and 15 ms; split 1 stays silent until the window
    /// `[0, 10)` fired (or 5 s passed), then sends an event at 3 ms. Idle, split 1 does not
    /// hold the watermark back, so the window fires without it and its event comes late:
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    /// use std::time::{Duration, Instant};
    /// use typeinfo_runtime::{ReadStatus, Result, Source, SourceOutput, SplitReader};
    /// use typeinfo_runtime::{StreamExecutionEnvironment, TumblingEventTimeWindows};
    /// use typeinfo_runtime::WatermarkStrategy;
    ///
    /// static FIRED: AtomicBool = AtomicBool::new(false);
    ///
    /// struct Reader { split: u32, sent: bool, opened: Instant }
    ///
    /// impl SplitReader<i64> for Reader {
    ///     type Position = u64;
    ///     fn read(&mut self, out: &mut SourceOutput<'_, i64>, _: usize) -> Result<ReadStatus> {
    ///         if self.split == 0 && !std::mem::replace(&mut self.sent, true) {
    ///             [1, 2, 15].into_iter().for_each(|t| out.collect_with_timestamp(t, t));
    ///         }
    ///         if !FIRED.load(SeqCst) && self.opened.elapsed() < Duration::from_secs(5) {
    ///             return Ok(ReadStatus::NothingAvailable);
    ///         }
    ///         if self.split == 1 {
    ///             out.collect_with_timestamp(3, 3);
    ///         }
    ///         Ok(ReadStatus::Finished)
    ///     }
    ///     fn position(&self) -> u64 { 0 }
    ///     fn seek(&mut self, _: u64) -> Result<()> { Ok(()) }
    /// }
    ///
    /// struct TwoSplits;
    ///
    /// impl Source<i64> for TwoSplits {
    ///     type Split = u32;
    ///     type Reader = Reader;
    ///     fn splits(&self, _: usize) -> Result<Vec<u32>> { Ok(vec![0, 1]) }
    ///     fn reader(&self, &split: &u32) -> Result<Reader> {
    ///         Ok(Reader { split, sent: false, opened: Instant::now() })
    ///     }
    /// }
    ///
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let strategy =
    ///     WatermarkStrategy::for_monotonous_timestamps().with_idleness(Duration::from_millis(10));
    /// let sums = env
    ///     .from_source(TwoSplits, strategy, "two splits")
    ///     .key_by(|_: &i64| 0u8)
    ///     .window(TumblingEventTimeWindows::of_millis(10))
    ///     .reduce(|a, b| a + b)
    ///     .map(|sum| {
    ///         FIRED.store(true, SeqCst);
    ///         sum
    ///     })
    ///     .collect();
    /// env.execute("idle split")?;
    /// assert_eq!(sums.take(), [3, 15]); // without idleness: [6, 15], after 5 s
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_idleness(mut self, timeout: Duration) -> Self {
        self.idleness = Some(timeout.as_millis().min(i64::MAX as u128) as i64);
        self
    }

    /// The strategy of batch mode: the same timestamps, no watermarks but the final maximal
    /// one (Flink's "perfect watermark": nothing is late).
    pub(crate) fn for_mode(&self, batch: bool) -> Self {
        let mut s = self.clone();
        if batch {
            s.out_of_orderness = None;
            s.idleness = None;
        }
        s
    }

    pub(crate) fn out_of_orderness(&self) -> Option<i64> {
        self.out_of_orderness
    }

    pub(crate) fn idleness(&self) -> Option<i64> {
        self.idleness
    }

    #[allow(clippy::type_complexity)] // the user's timestamp assigner
    pub(crate) fn assigner(&self) -> Option<&Arc<dyn Fn(&T, i64) -> i64 + Send + Sync>> {
        self.assigner.as_ref()
    }

    /// Emits a watermark after every event that advances it.
    pub fn emit_per_event(mut self) -> Self {
        self.emission = Emission::PerEvent;
        self
    }

    /// Emits the watermark periodically (the default).
    pub fn emit_periodically(mut self) -> Self {
        self.emission = Emission::Periodic;
        self
    }

    pub(crate) fn describe(&self) -> String {
        let generator = match self.out_of_orderness {
            Some(0) => "monotonous timestamps".to_owned(),
            Some(ms) => format!("bounded out-of-orderness {ms} ms"),
            None => "no watermarks".to_owned(),
        };
        let emission = match self.emission {
            Emission::PerEvent => "per event",
            Emission::Periodic => "periodic",
        };
        format!("Timestamps/Watermarks ({generator}, {emission})")
    }
}

/// Applies a [`WatermarkStrategy`].
pub(crate) struct TimestampsAndWatermarks<T> {
    strategy: WatermarkStrategy<T>,
    max_timestamp: i64,
    emitted: i64,
    interval_ms: i64,
    last_emit_ms: i64,
}

impl<T> TimestampsAndWatermarks<T> {
    pub(crate) fn new(strategy: WatermarkStrategy<T>, interval_ms: i64) -> Self {
        TimestampsAndWatermarks {
            strategy,
            max_timestamp: i64::MIN,
            emitted: i64::MIN,
            interval_ms: interval_ms.max(1),
            last_emit_ms: now_ms(),
        }
    }

    fn current(&self) -> i64 {
        match self.strategy.out_of_orderness {
            Some(ooo) => self.max_timestamp.saturating_sub(ooo).saturating_sub(1),
            None => i64::MIN,
        }
    }

    /// Emits the watermark if it advanced; `true` if it did.
    fn emit<O, I>(&mut self, out: &mut Outputs<O, I>) -> bool {
        let w = self.current();
        let advanced = w > self.emitted;
        if advanced {
            self.emitted = w;
            out.watermark(w);
        }
        advanced
    }
}

impl<T: 'static> Operator<T, T> for TimestampsAndWatermarks<T> {
    #[inline]
    fn process(&mut self, ts: i64, value: T, out: &mut Outputs<T, T>) -> Result<()> {
        let ts = match &self.strategy.assigner {
            Some(assign) => assign(&value, ts),
            None => ts,
        };
        out.main.collect(ts, value);
        if ts != NO_TIMESTAMP && ts > self.max_timestamp {
            self.max_timestamp = ts;
            if self.strategy.emission == Emission::PerEvent {
                let _ = self.emit(out);
            }
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Outputs<T, T>) -> Result<()> {
        if watermark == i64::MAX && self.emitted < i64::MAX {
            self.emitted = i64::MAX;
            out.watermark(i64::MAX);
        }
        Ok(())
    }

    fn end_of_activation(&mut self, out: &mut Outputs<T, T>) -> Result<()> {
        if self.strategy.emission == Emission::Periodic && self.interval_ms == 0 {
            let _ = self.emit(out);
        } else if self.strategy.emission == Emission::Periodic {
            // The interval counts from the last watermark emitted, not from the last look:
            // a watermark that became due while nothing could be emitted goes out at the
            // first activation that has one (with chained operators, the one that processed
            // the records, before the next checkpoint barrier).
            let now = now_ms();
            if now - self.last_emit_ms >= self.interval_ms && self.emit(out) {
                self.last_emit_ms = now;
            }
        }
        Ok(())
    }

    fn next_processing_time(&self) -> Option<i64> {
        (self.strategy.emission == Emission::Periodic
            && self.interval_ms > 0
            && self.current() > self.emitted)
            .then_some(self.last_emit_ms + self.interval_ms)
    }

    fn processing_time(&mut self, now: i64, out: &mut Outputs<T, T>) -> Result<()> {
        self.last_emit_ms = now;
        let _ = self.emit(out);
        Ok(())
    }

    fn snapshot(
        &mut self,
        _epoch: u64,
        _keyed: &crate::checkpoint::store::KeyedPart<'_>,
    ) -> Result<Vec<u8>> {
        let mut data = self.max_timestamp.to_le_bytes().to_vec();
        data.extend_from_slice(&self.emitted.to_le_bytes());
        Ok(data)
    }

    /// Continues from the highest timestamp and the watermark of the snapshot (the lowest of
    /// its subtasks when the parallelism changed), so that records replayed after a restore
    /// meet the watermark they met before.
    fn restore(
        &mut self,
        _keyed: &[crate::checkpoint::native_part::KeyedFile],
        parts: &[crate::checkpoint::format::OperatorPart],
    ) -> Result<()> {
        let mut restored = None::<(i64, i64)>;
        for part in parts {
            let (Some(a), Some(b)) = (
                part.data.first_chunk::<8>(),
                part.data.get(8..).and_then(<[u8]>::first_chunk::<8>),
            ) else {
                return Err(crate::error::Error::Corrupt(
                    "timestamps/watermarks state of the wrong length".into(),
                ));
            };
            let (max, emitted) = (i64::from_le_bytes(*a), i64::from_le_bytes(*b));
            restored = Some(restored.map_or((max, emitted), |(m, e)| (m.min(max), e.min(emitted))));
        }
        if let Some((max, emitted)) = restored {
            self.max_timestamp = max;
            self.emitted = emitted;
        }
        Ok(())
    }
}
