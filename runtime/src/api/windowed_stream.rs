//! [`WindowedStream`] and [`AllWindowedStream`]: a keyed (or whole) stream cut into windows by
//! an assigner, with its trigger, evictor, allowed lateness and window function.

use std::sync::Arc;
use std::time::Duration;

use typeinfo_state::{
    AggregateFunction, AggregatingStateDescriptor, KeyedBackend, KeyedStateBackend,
    ListStateDescriptor, ReducingStateDescriptor,
};

use crate::api::handles::{DataStream, WindowedStream};
use crate::api::node::NodeSpec;
use crate::batch::hash::{
    Accumulate, Aggregating, Finish, HashWindowAggregate, HashWindowSpec, Reducing,
};
use crate::batch::keyed::keyed_operator;
use crate::error::Result;
use crate::operator::context::OutputTag;
use crate::operator::contract::{KeyOf, Operator, OperatorSetup};
use crate::plan::{NodeKind, OutputType};
use crate::types::{Data, Key};
use crate::windowing::assigner::WindowAssigner;
use crate::windowing::evictor::Evictor;
use crate::windowing::function::ProcessWindowFunction;
use crate::windowing::operator::{
    aggregate_fold, evicting_contents, reduce_fold, ApplyFn, ContentsFactory, Fold,
    IncrementalContents, InternalWindowFunction, ListContents, ProcessAll, ProcessOne, ResultFn,
    WindowContents, WindowOperator,
};
use crate::windowing::trigger::Trigger;

impl<K, T, A: WindowAssigner, Tr> std::fmt::Debug for WindowedStream<K, T, A, Tr> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowedStream")
            .field("assigner", &self.assigner)
            .field("trigger", &std::any::type_name::<Tr>())
            .field("evictor", &self.evictor.is_some())
            .field("allowed_lateness_ms", &self.allowed_lateness)
            .finish()
    }
}

impl<K: Key, T: Data, A: WindowAssigner, Tr: Trigger<K, T, A::Window>> WindowedStream<K, T, A, Tr> {
    /// Keeps windows for `lateness` after they fire; late records within it fire them again.
    pub fn allowed_lateness(self, lateness: Duration) -> Self {
        self.allowed_lateness_millis(lateness.as_millis().min(i64::MAX as u128) as i64)
    }

    /// As [`allowed_lateness`](Self::allowed_lateness), in milliseconds (a negative lateness
    /// is refused when the job is built, as Flink refuses it).
    pub fn allowed_lateness_millis(mut self, lateness: i64) -> Self {
        self.allowed_lateness = lateness;
        self
    }

    /// Sends late records to the side output `tag` (read it with [`DataStream::side_output`]
    /// on the window's result stream) instead of dropping them.
    pub fn side_output_late_data(mut self, tag: &OutputTag<T>) -> Self {
        self.late = Some(tag.id().to_owned());
        self
    }

    /// Replaces the trigger (Flink's `WindowedStream.trigger`): when windows fire and purge.
    /// With a merging assigner (session windows) the trigger must be able to merge; one that
    /// cannot is refused when the job is built.
    ///
    /// ```
    /// use typeinfo_runtime::trigger::CountTrigger;
    /// use typeinfo_runtime::{StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};
    ///
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let sums = env
    ///     .from_collection(vec![1i64, 2, 3, 4, 5])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|v: &i64, _| *v))
    ///     .key_by(|_: &i64| 0u8)
    ///     .window(TumblingEventTimeWindows::of_millis(100))
    ///     .trigger(CountTrigger::of(2)) // early results every two records, nothing at the end
    ///     .reduce(|a, b| a + b)
    ///     .collect();
    /// env.execute("early")?;
    /// assert_eq!(sums.take(), [3, 10]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn trigger<Tr2: Trigger<K, T, A::Window>>(
        self,
        trigger: Tr2,
    ) -> WindowedStream<K, T, A, Tr2> {
        WindowedStream {
            keyed: self.keyed,
            assigner: self.assigner,
            trigger,
            evictor: self.evictor,
            allowed_lateness: self.allowed_lateness,
            late: self.late,
            non_parallel: self.non_parallel,
            default_trigger: false,
        }
    }

    /// Evicts elements before (or after) the window's function (Flink's
    /// `WindowedStream.evictor`). The window then keeps all its elements: `aggregate` and
    /// `reduce` run over the full contents when it fires.
    pub fn evictor(mut self, evictor: impl Evictor<T, A::Window>) -> Self {
        self.evictor = Some(Arc::new(evictor));
        self
    }

    fn build<O: Data>(
        &self,
        what: &str,
        contents: ContentsFactory<K, A::Window, T, O>,
        hash: Option<HashMake<T, O>>,
    ) -> DataStream<O> {
        let (selector, assigner, trigger, lateness, late) = (
            Arc::clone(&self.keyed.selector),
            self.assigner.clone(),
            self.trigger.clone(),
            self.allowed_lateness,
            self.late.is_some(),
        );
        let name = if self.non_parallel {
            "Window All"
        } else {
            "Window"
        };
        let description = self.description(what);
        let window = Arc::new(
            move |setup: &OperatorSetup| -> Result<Box<dyn Operator<T, O>>> {
                Ok(Box::new(WindowOperator::new(
                    setup,
                    Arc::clone(&selector),
                    assigner.clone(),
                    trigger.clone(),
                    lateness,
                    late,
                    &contents,
                )?))
            },
        );
        let selector = Arc::clone(&self.keyed.selector);
        let make = move |setup: &OperatorSetup| {
            if let Some(hash) = hash.as_ref() {
                if setup.batch && setup.batch_hash_aggregation {
                    return hash(setup);
                }
            }
            let window = Arc::clone(&window);
            keyed_operator(
                setup,
                &KeyOf::Every(Arc::clone(&selector)),
                move |setup: &OperatorSetup| window(setup),
            )
        };
        let invalid = self.invalid();
        let spec = NodeSpec {
            side_outputs: self.late.iter().cloned().collect(),
            invalid,
            parallelism: self.non_parallel.then_some(1),
            non_parallel: self.non_parallel,
            ..NodeSpec::new(NodeKind::Operator, name, description)
        };
        let (id, chain) = self
            .keyed
            .stream
            .add_operator(spec, Some(OutputType::of::<O>()), make);
        DataStream::of_node(&self.keyed.stream.env, id, 0, Some(chain))
    }

    /// The window operator's description for `explain`.
    fn description(&self, what: &str) -> String {
        format!(
            "{}({}, {}{}, allowed lateness {} ms, {what}{})",
            if self.non_parallel {
                "WindowAll"
            } else {
                "Window"
            },
            self.assigner,
            short_type_name::<Tr>(),
            if self.evictor.is_some() {
                ", evicting"
            } else {
                ""
            },
            self.allowed_lateness,
            if self.late.is_some() {
                ", late data to side output"
            } else {
                ""
            }
        )
    }

    /// What makes the window operator unusable, said when the job is translated: a negative
    /// allowed lateness, an invalid assigner, or a merging assigner with a trigger that
    /// cannot merge.
    fn invalid(&self) -> Option<String> {
        let negative = (self.allowed_lateness < 0).then(|| {
            format!(
                "the allowed lateness must not be negative (got {} ms)",
                self.allowed_lateness
            )
        });
        negative.or_else(|| self.assigner.validate().err()).or_else(|| {
            (self.assigner.is_merging() && !self.trigger.can_merge()).then(|| {
                format!(
                    "a merging window assigner ({}) cannot be used with a trigger that does not support merging ({})",
                    self.assigner,
                    short_type_name::<Tr>()
                )
            })
        })
    }

    /// Batch mode's hash aggregation of this window (see [`crate::batch::hash`]), when it
    /// applies: event-time windows that do not merge, the assigner's own trigger, no evictor,
    /// and a result computed from the accumulator alone (`finish`, no process function).
    fn hash_aggregation<Acc: Data, O: Data>(
        &self,
        accumulate: Arc<dyn Accumulate<T, Acc>>,
        finish: Option<Finish<K, A::Window, Acc, O>>,
    ) -> Option<HashMake<T, O>> {
        let applies = self.default_trigger
            && self.evictor.is_none()
            && self.assigner.is_event_time()
            && !self.assigner.is_merging();
        let spec = HashWindowSpec {
            selector: Arc::clone(&self.keyed.selector),
            assigner: self.assigner.clone(),
            accumulate,
            finish: finish.filter(|_| applies)?,
        };
        Some(Arc::new(
            move |setup: &OperatorSetup| -> Result<Box<dyn Operator<T, O>>> {
                Ok(Box::new(HashWindowAggregate::new(setup, spec.clone())?))
            },
        ))
    }

    /// The contents of a window whose function takes one value folded from the elements:
    /// incremental state, or every element when there is an evictor.
    fn folded<R: 'static, O: Data, F>(
        &self,
        what: &str,
        incremental: impl Fn(&mut KeyedBackend<K>, F) -> Result<Box<dyn WindowContents<K, A::Window, T, O>>>
            + Send
            + Sync
            + 'static,
        fold: Fold<T, R>,
        function: F,
        hash: Option<HashMake<T, O>>,
    ) -> DataStream<O>
    where
        F: InternalWindowFunction<K, A::Window, R, O> + Clone + Sync,
    {
        let contents: ContentsFactory<K, A::Window, T, O> = match &self.evictor {
            None => Arc::new(move |backend| incremental(backend, function.clone())),
            Some(evictor) => {
                let evictor = Arc::clone(evictor);
                Arc::new(move |backend| {
                    evicting_contents(
                        backend,
                        Arc::clone(&evictor),
                        Arc::clone(&fold),
                        function.clone(),
                    )
                })
            }
        };
        self.build(what, contents, hash)
    }

    /// The contents of a window whose function takes all elements.
    fn listed<O: Data, F>(&self, what: &str, function: F) -> DataStream<O>
    where
        F: InternalWindowFunction<K, A::Window, Vec<T>, O> + Clone + Sync,
    {
        let contents: ContentsFactory<K, A::Window, T, O> = match &self.evictor {
            None => {
                let descriptor = ListStateDescriptor::new("window-contents");
                Arc::new(move |backend| {
                    Ok(Box::new(ListContents {
                        state: backend.list_state(&descriptor)?,
                        function: function.clone(),
                    }))
                })
            }
            Some(evictor) => {
                let evictor = Arc::clone(evictor);
                Arc::new(move |backend| {
                    evicting_contents(
                        backend,
                        Arc::clone(&evictor),
                        Arc::new(Some),
                        function.clone(),
                    )
                })
            }
        };
        self.build(what, contents, None)
    }

    /// `reduce`, with `finish` when the result is the reduced record's alone (batch mode may
    /// then aggregate by hash).
    fn reduced<O: Data, F>(
        &self,
        f: impl Fn(&T, &T) -> T + Send + Sync + 'static,
        function: F,
        finish: Option<Finish<K, A::Window, T, O>>,
    ) -> DataStream<O>
    where
        F: InternalWindowFunction<K, A::Window, T, O> + Clone + Sync,
    {
        let f: typeinfo_state::ReduceFn<T> = Arc::new(f);
        let hash = self.hash_aggregation(Arc::new(Reducing(Arc::clone(&f))), finish);
        let g = Arc::clone(&f);
        let descriptor =
            ReducingStateDescriptor::new("window-contents", move |a: &T, b: &T| g(a, b));
        self.folded(
            "reduce",
            move |backend, function| {
                Ok(Box::new(IncrementalContents::new(
                    backend.reducing_state(&descriptor)?,
                    function,
                )))
            },
            reduce_fold(f),
            function,
            hash,
        )
    }

    /// `aggregate`, with `finish` when the result is computed from the aggregate's result
    /// alone (batch mode may then aggregate by hash).
    fn aggregated<Acc: Data + Sync, R: 'static, O: Data, F>(
        &self,
        aggregate: impl AggregateFunction<T, Acc, R> + 'static,
        function: F,
        finish: Option<Finish<K, A::Window, R, O>>,
    ) -> DataStream<O>
    where
        F: InternalWindowFunction<K, A::Window, R, O> + Clone + Sync,
    {
        let aggregate: Arc<dyn AggregateFunction<T, Acc, R>> = Arc::new(aggregate);
        let finish = finish.map(|f| {
            let aggregate = Arc::clone(&aggregate);
            let finish: Finish<K, A::Window, Acc, O> =
                Arc::new(move |key: &K, window: &A::Window, acc: Acc| {
                    f(key, window, aggregate.get_result(&acc))
                });
            finish
        });
        let hash = self.hash_aggregation(Arc::new(Aggregating(Arc::clone(&aggregate))), finish);
        let shared = SharedAggregate(Arc::clone(&aggregate));
        let descriptor = AggregatingStateDescriptor::new("window-contents", shared);
        self.folded(
            "aggregate",
            move |backend, function| {
                Ok(Box::new(IncrementalContents::new(
                    backend.aggregating_state(&descriptor)?,
                    function,
                )))
            },
            aggregate_fold(aggregate),
            function,
            hash,
        )
    }

    /// Reduces each window's records with `f`; emits the reduced record when it fires.
    pub fn reduce(&self, f: impl Fn(&T, &T) -> T + Send + Sync + 'static) -> DataStream<T> {
        self.reduced(
            f,
            ResultFn(Arc::new(|_: &K, _: &A::Window, r: T| r)),
            Some(Arc::new(|_: &K, _: &A::Window, r: T| r)),
        )
    }

    /// Reduces each window incrementally with `f`, then runs `function` on the one reduced
    /// record with the window's context (Flink's `reduce(reduceFunction, processWindowFunction)`).
    pub fn reduce_process<O: Data, F: ProcessWindowFunction<K, T, O, A::Window> + Clone + Sync>(
        &self,
        f: impl Fn(&T, &T) -> T + Send + Sync + 'static,
        function: F,
    ) -> DataStream<O> {
        self.reduced(f, ProcessOne(function), None)
    }

    /// Aggregates each window's records incrementally with `function`; emits its result.
    pub fn aggregate<Acc: Data + Sync, R: Data>(
        &self,
        function: impl AggregateFunction<T, Acc, R> + 'static,
    ) -> DataStream<R> {
        self.aggregate_with(function, |_: &K, _: &A::Window, r: R| r)
    }

    /// Aggregates each window incrementally with `function`, then emits
    /// `f(key, window, result)` (Flink's `aggregate` with a window function).
    pub fn aggregate_with<Acc: Data + Sync, R: 'static, O: Data>(
        &self,
        function: impl AggregateFunction<T, Acc, R> + 'static,
        f: impl Fn(&K, &A::Window, R) -> O + Send + Sync + 'static,
    ) -> DataStream<O> {
        let f = Arc::new(f);
        self.aggregated(function, ResultFn(Arc::clone(&f)), Some(f))
    }

    /// Aggregates each window incrementally with `aggregate`, then runs `function` on the one
    /// result with the window's context (Flink's
    /// `aggregate(aggregateFunction, processWindowFunction)`).
    ///
    /// ```
    /// use typeinfo_runtime::functions::Count;
    /// use typeinfo_runtime::{
    ///     ProcessWindowFunction, StreamExecutionEnvironment, TimeWindow, TumblingEventTimeWindows,
    ///     WatermarkStrategy, WindowContext,
    /// };
    ///
    /// #[derive(Clone)]
    /// struct Label;
    /// impl ProcessWindowFunction<u8, u64, String, TimeWindow> for Label {
    ///     fn process(&mut self, _: &u8, counts: Vec<u64>, ctx: &mut WindowContext<'_, u8, TimeWindow, String>) -> typeinfo_runtime::Result<()> {
    ///         let (w, n) = (*ctx.window(), counts[0]); // one incremental result
    ///         ctx.collect(format!("{n} in [{}, {})", w.start, w.end));
    ///         Ok(())
    ///     }
    /// }
    ///
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let lines = env
    ///     .from_collection(vec![1i64, 2, 12])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|v: &i64, _| *v))
    ///     .key_by(|_: &i64| 0u8)
    ///     .window(TumblingEventTimeWindows::of_millis(10))
    ///     .aggregate_process(Count, Label)
    ///     .collect();
    /// env.execute("labels")?;
    /// assert_eq!(lines.take(), ["2 in [0, 10)", "1 in [10, 20)"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn aggregate_process<Acc: Data + Sync, R: 'static, O: Data, F>(
        &self,
        aggregate: impl AggregateFunction<T, Acc, R> + 'static,
        function: F,
    ) -> DataStream<O>
    where
        F: ProcessWindowFunction<K, R, O, A::Window> + Clone + Sync,
    {
        self.aggregated(aggregate, ProcessOne(function), None)
    }

    /// Keeps every record of a window and calls `f(key, window, records, out)` when it fires
    /// (Flink's `apply` with a `WindowFunction`).
    pub fn apply<O: Data>(
        &self,
        f: impl Fn(&K, &A::Window, Vec<T>, &mut Vec<O>) + Send + Sync + 'static,
    ) -> DataStream<O> {
        self.listed("apply", ApplyFn(Arc::new(f)))
    }

    /// Keeps every record of a window and runs `function` on them with the window's context
    /// when it fires (Flink's `process` with a `ProcessWindowFunction`): the window, the
    /// watermark, per-window and per-key state, side outputs.
    pub fn process<O: Data, F: ProcessWindowFunction<K, T, O, A::Window> + Clone + Sync>(
        &self,
        function: F,
    ) -> DataStream<O> {
        self.listed("process", ProcessAll(function))
    }
}

/// Makes a subtask's hash-aggregated window operator (batch mode).
type HashMake<T, O> = Arc<dyn Fn(&OperatorSetup) -> Result<Box<dyn Operator<T, O>>> + Send + Sync>;

/// An aggregate function shared between the window's state and its evicting fold.
struct SharedAggregate<T, Acc, R>(Arc<dyn AggregateFunction<T, Acc, R>>);

impl<T, Acc, R> AggregateFunction<T, Acc, R> for SharedAggregate<T, Acc, R> {
    fn create_accumulator(&self) -> Acc {
        self.0.create_accumulator()
    }
    fn add(&self, value: &T, accumulator: &mut Acc) {
        self.0.add(value, accumulator);
    }
    fn get_result(&self, accumulator: &Acc) -> R {
        self.0.get_result(accumulator)
    }
    fn merge(&self, a: Acc, b: Acc) -> Acc {
        self.0.merge(a, b)
    }
}

/// A type's name without its module path (`CountTrigger<GlobalWindow>`), for `explain`.
fn short_type_name<X>() -> String {
    let full = std::any::type_name::<X>();
    let mut out = String::new();
    let mut word = String::new();
    for c in full.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            out.push_str(word.rsplit("::").next().unwrap_or(&word));
            word.clear();
            out.push(c);
        }
    }
    out.push_str(word.rsplit("::").next().unwrap_or(&word));
    out
}
