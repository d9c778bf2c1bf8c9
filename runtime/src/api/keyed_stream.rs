//! [`KeyedStream`]: a stream partitioned by key, with keyed state, timers, rolling
//! aggregations, windows, joins and the broadcast state pattern.

use std::sync::Arc;

use typeinfo_state::{KeyedStateBackend, StateValue, ValueState, ValueStateDescriptor};

use crate::api::handles::BroadcastStream;
use crate::api::handles::DataStream;
use crate::api::handles::IntervalJoin;
use crate::api::handles::KeyedBroadcastConnectedStreams;
use crate::api::handles::KeyedConnectedStreams;
use crate::api::handles::KeyedStream;
use crate::api::handles::WindowedStream;
use crate::api::node::Selector;
use crate::batch::keyed::keyed_operator;
use crate::error::Result;
use crate::exec::compile::Partition;
use crate::operator::context::TimeDomain;
use crate::operator::contract::{KeyOf, OperatorSetup};
use crate::plan::Partitioning;
use crate::types::{Data, Key};
use crate::user::keyed_process::{KeyedProcessFunction, KeyedProcessFunctionOperator};
use crate::user::one_input::{OneInputOperator, OperatorContext, StateContext, UserOperator};
use crate::windowing::assigner::{GlobalWindows, WindowAssigner};
use crate::windowing::evictor::CountEvictor;
use crate::windowing::trigger::{CountTrigger, PurgingTrigger, Trigger};
use crate::windowing::window::GlobalWindow;

impl<K, T> Clone for KeyedStream<K, T> {
    fn clone(&self) -> Self {
        KeyedStream {
            stream: self.stream.clone(),
            selector: Arc::clone(&self.selector),
        }
    }
}

impl<K, T> std::fmt::Debug for KeyedStream<K, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedStream")
            .field("key", &std::any::type_name::<K>())
            .field("stream", &self.stream)
            .finish()
    }
}

impl<K: Key, T: Data> KeyedStream<K, T> {
    /// The stream before partitioning (its records as their producers emit them), and its
    /// key selector: two-input operators tag each input and key both again together, with
    /// one exchange.
    pub(crate) fn parts(&self) -> (DataStream<T>, Selector<T, K>) {
        (
            self.stream
                .partitioned(Partition::Default, Partitioning::Default),
            Arc::clone(&self.selector),
        )
    }

    /// Windows per key, cut by `assigner` and fired by its default trigger (change it with
    /// [`WindowedStream::trigger`]).
    pub fn window<A: WindowAssigner>(
        &self,
        assigner: A,
    ) -> WindowedStream<K, T, A, A::DefaultTrigger>
    where
        A::DefaultTrigger: Trigger<K, T, A::Window>,
    {
        WindowedStream {
            keyed: KeyedStream {
                stream: self.stream.clone(),
                selector: Arc::clone(&self.selector),
            },
            trigger: assigner.default_trigger(),
            assigner,
            evictor: None,
            allowed_lateness: 0,
            late: None,
            non_parallel: false,
            default_trigger: true,
        }
    }

    /// Windows of `n` records per key: a window fires and is purged at every `n`-th record
    /// of its key (Flink's `countWindow(n)`: [`GlobalWindows`] with
    /// `PurgingTrigger::of(CountTrigger::of(n))`). Records that do not complete a window are
    /// never emitted.
    pub fn count_window(
        &self,
        n: u64,
    ) -> WindowedStream<K, T, GlobalWindows, PurgingTrigger<CountTrigger<GlobalWindow>>> {
        self.window(GlobalWindows)
            .trigger(PurgingTrigger::of(CountTrigger::of(n)))
    }

    /// Windows of the last `n` records per key, fired every `slide` records (Flink's
    /// `countWindow(n, slide)`: [`GlobalWindows`] with `CountEvictor::of(n)` and
    /// `CountTrigger::of(slide)`).
    pub fn count_window_sliding(
        &self,
        n: u64,
        slide: u64,
    ) -> WindowedStream<K, T, GlobalWindows, CountTrigger<GlobalWindow>> {
        self.window(GlobalWindows)
            .evictor(CountEvictor::of(usize::try_from(n).unwrap_or(usize::MAX)))
            .trigger(CountTrigger::of(slide))
    }

    /// Runs a user's operator on every record with its key current: keyed state, timers per
    /// key, operator state (see [`OneInputOperator`]).
    pub fn transform<O: Data, Op: OneInputOperator<K, T, O> + Clone>(
        &self,
        name: &str,
        operator: Op,
    ) -> DataStream<O> {
        let description = format!("Transform ({})", std::any::type_name::<Op>());
        self.stream.transform_keyed(
            name,
            description,
            KeyOf::Every(Arc::clone(&self.selector)),
            operator,
        )
    }

    fn rolling(&self, name: &str, f: impl Fn(&T, T) -> T + Send + Sync + 'static) -> DataStream<T>
    where
        T: StateValue,
    {
        self.transform(
            name,
            RollingReduce {
                f: Arc::new(f),
                state: None,
                batch: false,
            },
        )
    }

    /// Rolling reduce per key: emits, for every record, `f` of the key's previous result and
    /// the record (the first record of a key as it is), as Flink's `KeyedStream.reduce`.
    pub fn reduce(&self, f: impl Fn(&T, &T) -> T + Send + Sync + 'static) -> DataStream<T>
    where
        T: StateValue,
    {
        self.rolling("Keyed Reduce", move |acc, v| f(acc, &v))
    }

    /// Rolling sum per key: emits the running total with every record.
    ///
    /// ```
    /// use typeinfo_runtime::StreamExecutionEnvironment;
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let totals = env
    ///     .from_collection(vec![1i64, 2, 3, 4, 5])
    ///     .key_by(|v: &i64| v % 2)
    ///     .sum()
    ///     .collect();
    /// env.execute("running totals")?;
    /// assert_eq!(totals.take(), [1, 2, 4, 6, 9]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn sum(&self) -> DataStream<T>
    where
        T: StateValue + std::ops::Add<Output = T>,
    {
        self.rolling("Keyed Sum", |acc, v| acc.clone() + v)
    }

    /// Rolling minimum per key: emits the smallest record so far with every record.
    pub fn min(&self) -> DataStream<T>
    where
        T: StateValue + PartialOrd,
    {
        self.rolling("Keyed Min", |acc, v| if v < *acc { v } else { acc.clone() })
    }

    /// Rolling maximum per key: emits the largest record so far with every record.
    pub fn max(&self) -> DataStream<T>
    where
        T: StateValue + PartialOrd,
    {
        self.rolling("Keyed Max", |acc, v| if v > *acc { v } else { acc.clone() })
    }

    /// Rolling minimum by a field: emits the record with the smallest `field` so far (the
    /// first one among equals), as Flink's `minBy`.
    pub fn min_by<V: PartialOrd>(
        &self,
        field: impl Fn(&T) -> V + Send + Sync + 'static,
    ) -> DataStream<T>
    where
        T: StateValue,
    {
        self.rolling("Keyed MinBy", move |acc, v| {
            if field(&v) < field(acc) {
                v
            } else {
                acc.clone()
            }
        })
    }

    /// Rolling maximum by a field: emits the record with the largest `field` so far (the
    /// first one among equals), as Flink's `maxBy`.
    pub fn max_by<V: PartialOrd>(
        &self,
        field: impl Fn(&T) -> V + Send + Sync + 'static,
    ) -> DataStream<T>
    where
        T: StateValue,
    {
        self.rolling("Keyed MaxBy", move |acc, v| {
            if field(&v) > field(acc) {
                v
            } else {
                acc.clone()
            }
        })
    }

    /// Runs `function` on every record with its key's state and timers.
    pub fn process<O: Data, F: KeyedProcessFunction<K, T, O> + Clone>(
        &self,
        function: F,
    ) -> DataStream<O> {
        let selector = Arc::clone(&self.selector);
        self.stream.then(
            "Keyed Process",
            format!("KeyedProcess ({})", std::any::type_name::<F>()),
            move |setup| {
                let (function, inner_selector) = (function.clone(), Arc::clone(&selector));
                keyed_operator(
                    setup,
                    &KeyOf::Every(Arc::clone(&selector)),
                    move |setup: &OperatorSetup| {
                        Ok(Box::new(UserOperator::<K, T, O, _>::with_timer_state(
                            setup,
                            KeyedProcessFunctionOperator(function.clone()),
                            Some(KeyOf::Every(Arc::clone(&inner_selector))),
                            crate::checkpoint::format::TimerState::KeyedProcess.name(),
                        )?))
                    },
                )
            },
        )
    }
}

/// The rolling aggregations of [`KeyedStream`]: one value per key in keyed state. In batch
/// mode only the final value per key is emitted (timestamp `i64::MAX`), from an event-time
/// timer at the end of time that fires at the end of the key (Flink's
/// `BatchGroupedReduceOperator`).
struct RollingReduce<T, F> {
    f: Arc<F>,
    state: Option<ValueState<(), T>>,
    batch: bool,
}

impl<T, F> Clone for RollingReduce<T, F> {
    fn clone(&self) -> Self {
        RollingReduce {
            f: Arc::clone(&self.f),
            state: None,
            batch: false,
        }
    }
}

impl<K: Key, T: Data + StateValue, F: Fn(&T, T) -> T + Send + Sync + 'static>
    OneInputOperator<K, T, T> for RollingReduce<T, F>
{
    fn initialize_state(&mut self, ctx: &mut StateContext<'_, K>) -> Result<()> {
        self.batch = ctx.runtime().is_batch();
        self.state = Some(
            ctx.keyed_state()?
                .value_state(&ValueStateDescriptor::new("rolling"))?,
        );
        Ok(())
    }

    fn process_element(&mut self, value: T, ctx: &mut OperatorContext<'_, K, T>) -> Result<()> {
        let Some(state) = &self.state else {
            return Ok(());
        };
        let backend = ctx.keyed_state()?;
        let (next, first) = match state.value(backend, &())? {
            Some(acc) => ((self.f)(&acc, value), false),
            None => (value, true),
        };
        if self.batch {
            state.update(backend, &(), next)?;
            if first {
                ctx.register_event_time_timer(i64::MAX)?;
            }
        } else {
            state.update(backend, &(), next.clone())?;
            ctx.collect(next);
        }
        Ok(())
    }

    fn on_timer(
        &mut self,
        _time: i64,
        _domain: TimeDomain,
        ctx: &mut OperatorContext<'_, K, T>,
    ) -> Result<()> {
        let Some(state) = &self.state else {
            return Ok(());
        };
        if let Some(value) = state.value(ctx.keyed_state()?, &())? {
            ctx.collect_with_timestamp(value, i64::MAX);
        }
        Ok(())
    }
}

impl<K: Key, A: Data> KeyedStream<K, A> {
    /// Joins this keyed stream with `other` on equal keys and a time interval (Flink's
    /// interval join): set the interval with [`IntervalJoin::between`], then `process`.
    ///
    /// ```
    /// use typeinfo_runtime::{StreamExecutionEnvironment, WatermarkStrategy};
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let at = |e: &(char, i64), _| e.1;
    /// let orders = env.from_collection(vec![('a', 10i64), ('b', 10)])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(at));
    /// let shipments = env.from_collection(vec![('a', 12i64), ('a', 30), ('b', 9)])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(at));
    /// // Shipments within 0..=5 ms after their order.
    /// let shipped = orders
    ///     .key_by(|o: &(char, i64)| o.0)
    ///     .interval_join(&shipments.key_by(|s: &(char, i64)| s.0))
    ///     .between(0, 5)
    ///     .process(|o: &(char, i64), s: &(char, i64), ctx: &mut typeinfo_runtime::JoinContext<'_, '_, char, (char, i64, i64)>| {
    ///         ctx.collect((o.0, o.1, s.1));
    ///         Ok(())
    ///     })
    ///     .collect();
    /// env.execute("interval join")?;
    /// assert_eq!(shipped.take(), [('a', 10, 12)]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn interval_join<B: Data>(&self, other: &KeyedStream<K, B>) -> IntervalJoin<K, A, B> {
        let (first, first_key) = self.parts();
        let (second, second_key) = other.parts();
        IntervalJoin {
            keyed: KeyedConnectedStreams {
                inputs: first.connect(&second),
                first: first_key,
                second: second_key,
            },
            lower: 0,
            upper: 0,
            lower_exclusive: false,
            upper_exclusive: false,
        }
    }
}

impl<K: Key, A: Data> KeyedStream<K, A> {
    /// Connects this keyed stream to a [`BroadcastStream`], for a
    /// [`KeyedBroadcastProcessFunction`] (see the [`broadcast`](crate::broadcast) module).
    pub fn connect<B: Data>(
        &self,
        broadcast: &BroadcastStream<B>,
    ) -> KeyedBroadcastConnectedStreams<K, A, B> {
        KeyedBroadcastConnectedStreams {
            keyed: KeyedStream::clone(self),
            broadcast: broadcast.clone(),
        }
    }
}
