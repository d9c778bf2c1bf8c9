//! Two inputs: [`DataStream::connect`] joins two streams of different types into
//! [`ConnectedStreams`], processed by one function with a method per input, as Flink's
//! `connect` and co-functions do.
//!
//! - `a.connect(&b).map(f1, f2)` / `flat_map(f1, f2)`: a function per input, one output.
//! - `a.connect(&b).process(f)`: a [`CoProcessFunction`] (non-keyed), with side outputs.
//! - `a.connect(&b).key_by(ka, kb).process(f)`: a [`KeyedCoProcessFunction`]. Both inputs
//!   are partitioned by the same key type; the function's keyed state is shared by both
//!   inputs under the current key, and it registers event- and processing-time timers.
//! - `a.key_by(ka).interval_join(&b.key_by(kb)).between(lower, upper).process(f)`: an
//!   interval join, `f` on every pair with `a.ts + lower <= b.ts <= a.ts + upper`
//!   ([`IntervalJoin`]).
//! - `a.join(&b).where_(ka).equal_to(kb).window(assigner).apply(f)`: a window join, `f` on
//!   every pair of a key's records in a window; `a.co_group(&b)...apply(f)`: both sides'
//!   records of a key and window at once. Every window assigner, trigger and evictor
//!   applies (Flink builds them the same way: both inputs tagged into one windowed stream).
//!
//! # How it runs
//!
//! Each input is tagged into one stream of [`CoInput`] (`First(a)` or `Second(b)`, a light
//! operator per input named `Connect (input 1)` and `Connect (input 2)`), the two are
//! unioned, and one operator dispatches each record to the function's method for its input.
//! Everything a one-input operator has therefore holds for both inputs at once:
//!
//! - **Watermarks**: the operator's event time is the minimum over the subtasks of *both*
//!   inputs (its driver takes the minimum over every sending subtask), so a timer fires only
//!   when both inputs passed it; an idle input ([`WatermarkStrategy::with_idleness`]) stops
//!   holding the other back, as in Flink.
//! - **Checkpoints, restores, rescaling, both state backends, several processes** and
//!   **batch mode** (where a keyed co-function sees each key's records of both inputs
//!   together, in timestamp order).
//! - **Order between the inputs** is not defined (as in Flink): records of one input keep
//!   their order per sending subtask, but how the two interleave depends on scheduling.
//!   Functions must not depend on it; an enrichment that may see the order before the
//!   customer buffers the order (see the example).
//!
//! # Examples
//!
//! Orders enriched with their customer's name, whichever arrives first:
//!
//! ```
//! use typeinfo_runtime::{KeyedCoProcessFunction, KeyedContext, StreamExecutionEnvironment};
//! use typeinfo_state::{KeyedStateBackend, ListState, ListStateDescriptor, ValueState, ValueStateDescriptor};
//!
//! #[derive(Clone, Default)]
//! struct Enrich {
//!     name: Option<ValueState<(), String>>,
//!     waiting: Option<ListState<(), i64>>,
//! }
//!
//! impl KeyedCoProcessFunction<u32, (u32, String), (u32, i64), (String, i64)> for Enrich {
//!     fn open(&mut self, state: &mut typeinfo_runtime::KeyedBackend<u32>) -> typeinfo_runtime::Result<()> {
//!         self.name = Some(state.value_state(&ValueStateDescriptor::new("name"))?);
//!         self.waiting = Some(state.list_state(&ListStateDescriptor::new("waiting"))?);
//!         Ok(())
//!     }
//!     // A customer: remember the name, release the orders that waited for it.
//!     fn process_element1(&mut self, c: (u32, String), ctx: &mut KeyedContext<'_, u32, (String, i64)>) -> typeinfo_runtime::Result<()> {
//!         let (name, waiting) = (self.name.as_ref().unwrap(), self.waiting.as_ref().unwrap());
//!         name.update(ctx.state(), &(), c.1.clone())?;
//!         for amount in waiting.get(ctx.state(), &())? {
//!             ctx.collect((c.1.clone(), amount));
//!         }
//!         waiting.clear(ctx.state(), &())?;
//!         Ok(())
//!     }
//!     // An order: enrich it now, or wait for its customer.
//!     fn process_element2(&mut self, o: (u32, i64), ctx: &mut KeyedContext<'_, u32, (String, i64)>) -> typeinfo_runtime::Result<()> {
//!         match self.name.as_ref().unwrap().value(ctx.state(), &())? {
//!             Some(name) => ctx.collect((name, o.1)),
//!             None => self.waiting.as_ref().unwrap().add(ctx.state(), &(), o.1)?,
//!         }
//!         Ok(())
//!     }
//! }
//!
//! # fn main() -> typeinfo_runtime::Result<()> {
//! let env = StreamExecutionEnvironment::new();
//! let customers = env.from_collection(vec![(1u32, "ada".to_owned()), (2, "bob".to_owned())]);
//! let orders = env.from_collection(vec![(2u32, 20i64), (1, 10), (2, 5), (3, 7)]);
//! let enriched = customers
//!     .connect(&orders)
//!     .key_by(|c: &(u32, String)| c.0, |o: &(u32, i64)| o.0)
//!     .process(Enrich::default())
//!     .collect();
//! env.execute("enrich")?;
//! let mut out = enriched.take();
//! out.sort();
//! assert_eq!(out, [("ada".into(), 10), ("bob".into(), 5), ("bob".into(), 20)]);
//! # Ok(())
//! # }
//! ```
//!
//! [`WatermarkStrategy::with_idleness`]: crate::WatermarkStrategy::with_idleness

use std::marker::PhantomData;
use std::sync::Arc;

use typeinfo::TypeInfo;
use typeinfo_state::{KeyedBackend, KeyedStateBackend, MapState, MapStateDescriptor};

use crate::assigner::WindowAssigner;
use crate::context::{OutputTag, TimeDomain};
use crate::error::Result;
use crate::evictor::Evictor;
use crate::process::{KeyedContext, KeyedProcessFunction};
use crate::stream::{DataStream, KeyedStream, WindowedStream};
use crate::transform::{
    OneInputOperator, OperatorContext, ProcessFunction, RuntimeContext, StateContext,
};
use crate::trigger::Trigger;
use crate::{Data, Key};

/// A record of one of two connected inputs, as the operator behind [`ConnectedStreams`]
/// receives it.
#[derive(TypeInfo, Debug, Clone, PartialEq, Eq)]
#[typeinfo(name = "typeinfo.runtime.CoInput")]
pub enum CoInput<A, B> {
    /// A record of the first input (the stream `connect` was called on).
    First(A),
    /// A record of the second input.
    Second(B),
}

impl<T: Data> DataStream<T> {
    /// Connects this stream with `other` for one function with a method per input.
    ///
    /// - `other` a [`DataStream`] (of any type): [`ConnectedStreams`], for `map`,
    ///   `flat_map`, `process`, or `key_by` both sides for a keyed co-process function with
    ///   shared keyed state and timers (see the [`connect`](crate::connect) module).
    /// - `other` a [`BroadcastStream`](crate::BroadcastStream):
    ///   [`BroadcastConnectedStreams`](crate::BroadcastConnectedStreams), for a
    ///   [`BroadcastProcessFunction`](crate::BroadcastProcessFunction) (see the
    ///   [`broadcast`](crate::broadcast) module).
    pub fn connect<S: ConnectWith<T>>(&self, other: &S) -> S::Connected {
        other.connected_to(self)
    }
}

/// What a [`DataStream`] can be connected with ([`DataStream::connect`]): another
/// `DataStream` or a [`BroadcastStream`](crate::BroadcastStream).
pub trait ConnectWith<A: Data> {
    /// The connected streams.
    type Connected;

    /// `first` connected with `self` as the second input.
    fn connected_to(&self, first: &DataStream<A>) -> Self::Connected;
}

impl<A: Data, B: Data> ConnectWith<A> for DataStream<B> {
    type Connected = ConnectedStreams<A, B>;

    fn connected_to(&self, first: &DataStream<A>) -> Self::Connected {
        ConnectedStreams {
            first: first.clone(),
            second: self.clone(),
        }
    }
}

/// Two streams connected for one function with a method per input
/// ([`DataStream::connect`]; see the [module docs](self)).
pub struct ConnectedStreams<A: Data, B: Data> {
    first: DataStream<A>,
    second: DataStream<B>,
}

impl<A: Data, B: Data> Clone for ConnectedStreams<A, B> {
    fn clone(&self) -> Self {
        ConnectedStreams {
            first: self.first.clone(),
            second: self.second.clone(),
        }
    }
}

impl<A: Data, B: Data> std::fmt::Debug for ConnectedStreams<A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectedStreams").finish_non_exhaustive()
    }
}

impl<A: Data, B: Data> ConnectedStreams<A, B> {
    /// Both inputs as one stream of [`CoInput`]s.
    fn tagged(&self) -> DataStream<CoInput<A, B>> {
        let first = self
            .first
            .map(CoInput::<A, B>::First)
            .name("Connect (input 1)");
        let second = self
            .second
            .map(CoInput::<A, B>::Second)
            .name("Connect (input 2)");
        first.union(&[second])
    }

    /// Maps each record with the function of its input (Flink's `CoMapFunction`).
    ///
    /// ```
    /// use typeinfo_runtime::StreamExecutionEnvironment;
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let numbers = env.from_collection(vec![1i64, 2]);
    /// let words = env.from_collection(vec!["three".to_owned()]);
    /// let lines = numbers
    ///     .connect(&words)
    ///     .map(|n| format!("number {n}"), |w| format!("word {w}"))
    ///     .collect();
    /// env.execute("co-map")?;
    /// let mut lines = lines.take();
    /// lines.sort();
    /// assert_eq!(lines, ["number 1", "number 2", "word three"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn map<O: Data>(
        &self,
        first: impl Fn(A) -> O + Send + Sync + 'static,
        second: impl Fn(B) -> O + Send + Sync + 'static,
    ) -> DataStream<O> {
        self.tagged()
            .map(move |record| match record {
                CoInput::First(a) => first(a),
                CoInput::Second(b) => second(b),
            })
            .name("Co-Map")
    }

    /// Maps each record to any number of records with the function of its input (Flink's
    /// `CoFlatMapFunction`).
    pub fn flat_map<O: Data, I: IntoIterator<Item = O> + 'static>(
        &self,
        first: impl Fn(A) -> I + Send + Sync + 'static,
        second: impl Fn(B) -> I + Send + Sync + 'static,
    ) -> DataStream<O> {
        self.tagged()
            .flat_map(move |record| match record {
                CoInput::First(a) => first(a),
                CoInput::Second(b) => second(b),
            })
            .name("Co-FlatMap")
    }

    /// Runs a [`CoProcessFunction`] on every record of both inputs (non-keyed: operator
    /// state and side outputs, no keyed state or timers).
    pub fn process<O: Data, F: CoProcessFunction<A, B, O> + Clone>(
        &self,
        function: F,
    ) -> DataStream<O> {
        self.tagged()
            .process(CoProcess(function))
            .name("Co-Process")
    }

    /// Runs a user's [`TwoInputOperator`] on both inputs (non-keyed: operator state, no
    /// keyed state or timers). Each subtask gets a clone of `operator`.
    pub fn transform<O: Data, Op: TwoInputOperator<(), A, B, O> + Clone>(
        &self,
        name: &str,
        operator: Op,
    ) -> DataStream<O> {
        self.tagged().transform(name, TwoInput(operator))
    }

    /// Partitions both inputs by a key of the same type (`first` on the first input's
    /// records, `second` on the second's): records with equal keys meet in one subtask,
    /// under one key's state.
    pub fn key_by<K: Key>(
        &self,
        first: impl Fn(&A) -> K + Send + Sync + 'static,
        second: impl Fn(&B) -> K + Send + Sync + 'static,
    ) -> KeyedConnectedStreams<K, A, B> {
        KeyedConnectedStreams {
            inputs: self.clone(),
            first: Arc::new(first),
            second: Arc::new(second),
        }
    }
}

/// Connected streams partitioned by one key ([`ConnectedStreams::key_by`]).
pub struct KeyedConnectedStreams<K: Key, A: Data, B: Data> {
    inputs: ConnectedStreams<A, B>,
    first: Arc<dyn Fn(&A) -> K + Send + Sync>,
    second: Arc<dyn Fn(&B) -> K + Send + Sync>,
}

impl<K: Key, A: Data, B: Data> std::fmt::Debug for KeyedConnectedStreams<K, A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedConnectedStreams")
            .finish_non_exhaustive()
    }
}

impl<K: Key, A: Data, B: Data> KeyedConnectedStreams<K, A, B> {
    /// Runs a [`KeyedCoProcessFunction`]: keyed state shared by both inputs under the
    /// current key, timers, side outputs (Flink's `KeyedCoProcessFunction`).
    pub fn process<O: Data, F: KeyedCoProcessFunction<K, A, B, O> + Clone>(
        &self,
        function: F,
    ) -> DataStream<O> {
        self.tagged()
            .process(KeyedCoProcess(function))
            .name("Keyed Co-Process")
    }

    /// Runs a user's [`TwoInputOperator`] on both inputs with each record's key current:
    /// keyed state shared by both inputs, timers per key, operator state. Each subtask gets
    /// a clone of `operator`.
    pub fn transform<O: Data, Op: TwoInputOperator<K, A, B, O> + Clone>(
        &self,
        name: &str,
        operator: Op,
    ) -> DataStream<O> {
        self.tagged().transform(name, TwoInput(operator))
    }

    /// Both inputs as one stream of [`CoInput`]s keyed by each input's key.
    fn tagged(&self) -> KeyedStream<K, CoInput<A, B>> {
        let (first, second) = (Arc::clone(&self.first), Arc::clone(&self.second));
        self.inputs
            .tagged()
            .key_by(move |record: &CoInput<A, B>| match record {
                CoInput::First(a) => first(a),
                CoInput::Second(b) => second(b),
            })
    }
}

impl<T: Data> DataStream<T> {
    /// Joins this stream with `other` in windows (Flink's window join):
    /// `a.join(&b).where_(ka).equal_to(kb).window(assigner).apply(f)` calls `f` on every pair
    /// of records with equal keys in the same window, when the window fires (`where` is a
    /// Rust keyword, hence `where_`).
    ///
    /// ```
    /// use typeinfo_runtime::{StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy};
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// let at = |e: &(char, i64), _| e.1;
    /// let clicks = env.from_collection(vec![('a', 1i64), ('a', 12), ('b', 3)])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(at));
    /// let views = env.from_collection(vec![('a', 5i64), ('b', 15)])
    ///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(at));
    /// let pairs = clicks
    ///     .join(&views)
    ///     .where_(|c: &(char, i64)| c.0)
    ///     .equal_to(|v: &(char, i64)| v.0)
    ///     .window(TumblingEventTimeWindows::of_millis(10))
    ///     .apply(|c, v| (c.0, c.1, v.1))
    ///     .collect();
    /// env.execute("window join")?;
    /// assert_eq!(pairs.take(), [('a', 1, 5)]); // 'a' at 12 and 'b' at 3 have no partner in their window
    /// # Ok(())
    /// # }
    /// ```
    pub fn join<U: Data>(&self, other: &DataStream<U>) -> TwoInputWindows<T, U, Join> {
        TwoInputWindows::new(self.connect(other))
    }

    /// Groups this stream and `other` by key and window together (Flink's `coGroup`): the
    /// function gets both inputs' records of a key and window (either side may be empty).
    pub fn co_group<U: Data>(&self, other: &DataStream<U>) -> TwoInputWindows<T, U, CoGroup> {
        TwoInputWindows::new(self.connect(other))
    }
}

/// [`TwoInputWindows`] of a window join: the function gets each pair.
#[derive(Debug, Clone, Copy)]
pub struct Join;

/// [`TwoInputWindows`] of a co-group: the function gets both sides' records.
#[derive(Debug, Clone, Copy)]
pub struct CoGroup;

/// A window join or co-group being built: `where_`, then `equal_to`, then `window`.
pub struct TwoInputWindows<A: Data, B: Data, J> {
    inputs: ConnectedStreams<A, B>,
    kind: PhantomData<J>,
}

impl<A: Data, B: Data, J> std::fmt::Debug for TwoInputWindows<A, B, J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoInputWindows").finish_non_exhaustive()
    }
}

impl<A: Data, B: Data, J> TwoInputWindows<A, B, J> {
    fn new(inputs: ConnectedStreams<A, B>) -> Self {
        TwoInputWindows {
            inputs,
            kind: PhantomData,
        }
    }

    /// The key of the first input's records.
    pub fn where_<K: Key>(
        self,
        key: impl Fn(&A) -> K + Send + Sync + 'static,
    ) -> TwoInputWhere<K, A, B, J> {
        TwoInputWhere {
            inputs: self.inputs,
            first: Arc::new(key),
            kind: PhantomData,
        }
    }
}

/// A window join or co-group with the first input's key.
pub struct TwoInputWhere<K: Key, A: Data, B: Data, J> {
    inputs: ConnectedStreams<A, B>,
    first: Arc<dyn Fn(&A) -> K + Send + Sync>,
    kind: PhantomData<J>,
}

impl<K: Key, A: Data, B: Data, J> std::fmt::Debug for TwoInputWhere<K, A, B, J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoInputWhere").finish_non_exhaustive()
    }
}

impl<K: Key, A: Data, B: Data, J> TwoInputWhere<K, A, B, J> {
    /// The key of the second input's records (of the first's type).
    pub fn equal_to(
        self,
        key: impl Fn(&B) -> K + Send + Sync + 'static,
    ) -> TwoInputKeyed<K, A, B, J> {
        TwoInputKeyed {
            keyed: KeyedConnectedStreams {
                inputs: self.inputs,
                first: self.first,
                second: Arc::new(key),
            },
            kind: PhantomData,
        }
    }
}

/// A window join or co-group with both keys.
pub struct TwoInputKeyed<K: Key, A: Data, B: Data, J> {
    keyed: KeyedConnectedStreams<K, A, B>,
    kind: PhantomData<J>,
}

impl<K: Key, A: Data, B: Data, J> std::fmt::Debug for TwoInputKeyed<K, A, B, J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoInputKeyed").finish_non_exhaustive()
    }
}

impl<K: Key, A: Data, B: Data, J> TwoInputKeyed<K, A, B, J> {
    /// Windows of both inputs together, cut by `assigner` (any assigner: tumbling, sliding,
    /// sessions, global with a trigger) and fired by its default trigger.
    pub fn window<W: WindowAssigner>(
        &self,
        assigner: W,
    ) -> TwoInputWindowed<K, A, B, W, W::DefaultTrigger, J>
    where
        W::DefaultTrigger: Trigger<K, CoInput<A, B>, W::Window>,
    {
        TwoInputWindowed {
            windowed: self.keyed.tagged().window(assigner),
            kind: PhantomData,
        }
    }
}

/// A window join or co-group with its windows: set a trigger, an evictor or an allowed
/// lateness (over both inputs' records), then `apply` the function.
pub struct TwoInputWindowed<K: Key, A: Data, B: Data, W: WindowAssigner, Tr, J> {
    windowed: WindowedStream<K, CoInput<A, B>, W, Tr>,
    kind: PhantomData<J>,
}

impl<K: Key, A: Data, B: Data, W: WindowAssigner, Tr, J> std::fmt::Debug
    for TwoInputWindowed<K, A, B, W, Tr, J>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoInputWindowed")
            .field("windowed", &self.windowed)
            .finish()
    }
}

impl<K, A, B, W, Tr, J> TwoInputWindowed<K, A, B, W, Tr, J>
where
    K: Key,
    A: Data,
    B: Data,
    W: WindowAssigner,
    Tr: Trigger<K, CoInput<A, B>, W::Window>,
{
    /// Fires windows by `trigger` instead of the assigner's default.
    pub fn trigger<Tr2: Trigger<K, CoInput<A, B>, W::Window>>(
        self,
        trigger: Tr2,
    ) -> TwoInputWindowed<K, A, B, W, Tr2, J> {
        TwoInputWindowed {
            windowed: self.windowed.trigger(trigger),
            kind: PhantomData,
        }
    }

    /// Evicts records (of either input) from a window before or after the function.
    pub fn evictor(self, evictor: impl Evictor<CoInput<A, B>, W::Window>) -> Self {
        TwoInputWindowed {
            windowed: self.windowed.evictor(evictor),
            kind: PhantomData,
        }
    }

    /// Keeps windows for `lateness_ms` after they fire; late records within it fire them
    /// again (with every record of the window so far).
    pub fn allowed_lateness_millis(self, lateness_ms: i64) -> Self {
        TwoInputWindowed {
            windowed: self.windowed.allowed_lateness_millis(lateness_ms),
            kind: PhantomData,
        }
    }

    /// Calls `f(key, window, first, second, out)` with both inputs' records of a key and
    /// window, each side in arrival order.
    fn grouped<O: Data>(
        &self,
        name: &str,
        f: impl Fn(&K, &W::Window, Vec<A>, Vec<B>, &mut Vec<O>) + Send + Sync + 'static,
    ) -> DataStream<O> {
        self.windowed
            .apply(move |key, window, records, out| {
                let (mut first, mut second) = (Vec::new(), Vec::new());
                for record in records {
                    match record {
                        CoInput::First(a) => first.push(a),
                        CoInput::Second(b) => second.push(b),
                    }
                }
                f(key, window, first, second, out);
            })
            .name(name)
    }
}

impl<K, A, B, W, Tr> TwoInputWindowed<K, A, B, W, Tr, Join>
where
    K: Key,
    A: Data,
    B: Data,
    W: WindowAssigner,
    Tr: Trigger<K, CoInput<A, B>, W::Window>,
{
    /// Calls `f` on every pair of records (one of each input) with equal keys in a window
    /// when it fires: an inner join, so a key with records on one side only gives nothing.
    pub fn apply<O: Data>(&self, f: impl Fn(&A, &B) -> O + Send + Sync + 'static) -> DataStream<O> {
        self.grouped("Window Join", move |_, _, first, second, out| {
            for a in &first {
                for b in &second {
                    out.push(f(a, b));
                }
            }
        })
    }
}

impl<K, A, B, W, Tr> TwoInputWindowed<K, A, B, W, Tr, CoGroup>
where
    K: Key,
    A: Data,
    B: Data,
    W: WindowAssigner,
    Tr: Trigger<K, CoInput<A, B>, W::Window>,
{
    /// Calls `f(key, window, first, second, out)` with both inputs' records of each key and
    /// window when it fires (one side may be empty).
    pub fn apply<O: Data>(
        &self,
        f: impl Fn(&K, &W::Window, Vec<A>, Vec<B>, &mut Vec<O>) + Send + Sync + 'static,
    ) -> DataStream<O> {
        self.grouped("Window CoGroup", f)
    }
}

/// A function over two connected, non-keyed inputs (Flink's `CoProcessFunction`).
pub trait CoProcessFunction<A, B, O>: Send + Sync + 'static {
    /// Called once per subtask before the first record.
    ///
    /// # Errors
    ///
    /// An error fails the job.
    fn open(&mut self, _ctx: &RuntimeContext) -> Result<()> {
        Ok(())
    }

    /// A record of the first input.
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn process_element1(&mut self, value: A, ctx: &mut OperatorContext<'_, (), O>) -> Result<()>;

    /// A record of the second input.
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn process_element2(&mut self, value: B, ctx: &mut OperatorContext<'_, (), O>) -> Result<()>;

    /// Called once per subtask after the last record of both inputs.
    ///
    /// # Errors
    ///
    /// An error fails the job.
    fn close(&mut self, _ctx: &mut OperatorContext<'_, (), O>) -> Result<()> {
        Ok(())
    }
}

/// A function over two connected inputs keyed by the same key (Flink's
/// `KeyedCoProcessFunction`): both methods see the current key's state; timers fire with the
/// key they were registered for.
pub trait KeyedCoProcessFunction<K: Key, A, B, O>: Send + Sync + 'static {
    /// Called once per subtask before the first record: register state here.
    ///
    /// # Errors
    ///
    /// An error fails the job.
    fn open(&mut self, _state: &mut KeyedBackend<K>) -> Result<()> {
        Ok(())
    }

    /// A record of the first input, with its key current.
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn process_element1(&mut self, value: A, ctx: &mut KeyedContext<'_, K, O>) -> Result<()>;

    /// A record of the second input, with its key current.
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn process_element2(&mut self, value: B, ctx: &mut KeyedContext<'_, K, O>) -> Result<()>;

    /// A timer registered for the current key fired (event time: when the minimum of both
    /// inputs' watermarks passed it).
    ///
    /// # Errors
    ///
    /// An error fails the job (or restarts it, by its restart strategy).
    fn on_timer(
        &mut self,
        _timestamp: i64,
        _domain: TimeDomain,
        _ctx: &mut KeyedContext<'_, K, O>,
    ) -> Result<()> {
        Ok(())
    }
}

/// A user's operator with two inputs, as Flink's `TwoInputStreamOperator`, for
/// [`ConnectedStreams::transform`] (`K = ()`) and [`KeyedConnectedStreams::transform`]: the
/// life and the contexts of a [`OneInputOperator`](crate::OneInputOperator), with a method
/// per input. Event time is the minimum of both inputs' watermarks: the operator sees that
/// one watermark (Flink's `processWatermark1/2` are folded into it), and event-time timers
/// fire by it.
///
/// ```
/// use typeinfo_runtime::{OperatorContext, StreamExecutionEnvironment, TwoInputOperator};
///
/// /// Sums the first input, subtracts the second, per key; emits the balance at the end.
/// #[derive(Clone, Default)]
/// struct Balance(std::collections::BTreeMap<char, i64>);
///
/// impl TwoInputOperator<(), (char, i64), (char, i64), (char, i64)> for Balance {
///     fn process_element1(&mut self, v: (char, i64), _ctx: &mut OperatorContext<'_, (), (char, i64)>) -> typeinfo_runtime::Result<()> {
///         *self.0.entry(v.0).or_default() += v.1;
///         Ok(())
///     }
///     fn process_element2(&mut self, v: (char, i64), _ctx: &mut OperatorContext<'_, (), (char, i64)>) -> typeinfo_runtime::Result<()> {
///         *self.0.entry(v.0).or_default() -= v.1;
///         Ok(())
///     }
///     fn end_input(&mut self, ctx: &mut OperatorContext<'_, (), (char, i64)>) -> typeinfo_runtime::Result<()> {
///         for (&k, &v) in &self.0 {
///             ctx.collect((k, v));
///         }
///         Ok(())
///     }
/// }
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// env.set_parallelism(1);
/// let credits = env.from_collection(vec![('a', 10i64), ('b', 5)]);
/// let debits = env.from_collection(vec![('a', 3i64)]);
/// let balances = credits.connect(&debits).transform("Balance", Balance::default()).collect();
/// env.execute("balances")?;
/// assert_eq!(balances.take(), [('a', 7), ('b', 5)]);
/// # Ok(())
/// # }
/// ```
pub trait TwoInputOperator<K: Key, A, B, O>: Send + Sync + 'static {
    /// Registers the operator's state (keyed and operator state); see
    /// [`OneInputOperator::initialize_state`](crate::OneInputOperator::initialize_state).
    ///
    /// # Errors
    ///
    /// A state that cannot be registered; any error fails the job.
    fn initialize_state(&mut self, _ctx: &mut StateContext<'_, K>) -> Result<()> {
        Ok(())
    }

    /// Called once per subtask after state is restored, before the first record.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn open(&mut self, _ctx: &mut StateContext<'_, K>) -> Result<()> {
        Ok(())
    }

    /// A record of the first input (on keyed inputs, with its key current).
    ///
    /// # Errors
    ///
    /// Any error fails the job (or restarts it, by its restart strategy).
    fn process_element1(&mut self, value: A, ctx: &mut OperatorContext<'_, K, O>) -> Result<()>;

    /// A record of the second input (on keyed inputs, with its key current).
    ///
    /// # Errors
    ///
    /// Any error fails the job (or restarts it, by its restart strategy).
    fn process_element2(&mut self, value: B, ctx: &mut OperatorContext<'_, K, O>) -> Result<()>;

    /// The operator's watermark (the minimum of both inputs') advanced; event-time timers
    /// up to it have fired.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn process_watermark(
        &mut self,
        _watermark: i64,
        _ctx: &mut OperatorContext<'_, K, O>,
    ) -> Result<()> {
        Ok(())
    }

    /// A timer fired (with its key current).
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn on_timer(
        &mut self,
        _timestamp: i64,
        _domain: TimeDomain,
        _ctx: &mut OperatorContext<'_, K, O>,
    ) -> Result<()> {
        Ok(())
    }

    /// Called before the operator's state is written into checkpoint `checkpoint`.
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn snapshot_state(&mut self, _checkpoint: u64, _ctx: &mut StateContext<'_, K>) -> Result<()> {
        Ok(())
    }

    /// Both bounded inputs ended (after the maximal watermark and its timers).
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn end_input(&mut self, _ctx: &mut OperatorContext<'_, K, O>) -> Result<()> {
        Ok(())
    }
}

/// A [`TwoInputOperator`] as the operator of the tagged inputs.
#[derive(Clone)]
struct TwoInput<Op>(Op);

impl<K: Key, A, B, O, Op: TwoInputOperator<K, A, B, O>> OneInputOperator<K, CoInput<A, B>, O>
    for TwoInput<Op>
{
    fn initialize_state(&mut self, ctx: &mut StateContext<'_, K>) -> Result<()> {
        self.0.initialize_state(ctx)
    }
    fn open(&mut self, ctx: &mut StateContext<'_, K>) -> Result<()> {
        self.0.open(ctx)
    }
    fn process_element(
        &mut self,
        value: CoInput<A, B>,
        ctx: &mut OperatorContext<'_, K, O>,
    ) -> Result<()> {
        match value {
            CoInput::First(a) => self.0.process_element1(a, ctx),
            CoInput::Second(b) => self.0.process_element2(b, ctx),
        }
    }
    fn process_watermark(
        &mut self,
        watermark: i64,
        ctx: &mut OperatorContext<'_, K, O>,
    ) -> Result<()> {
        self.0.process_watermark(watermark, ctx)
    }
    fn on_timer(
        &mut self,
        timestamp: i64,
        domain: TimeDomain,
        ctx: &mut OperatorContext<'_, K, O>,
    ) -> Result<()> {
        self.0.on_timer(timestamp, domain, ctx)
    }
    fn snapshot_state(&mut self, checkpoint: u64, ctx: &mut StateContext<'_, K>) -> Result<()> {
        self.0.snapshot_state(checkpoint, ctx)
    }
    fn end_input(&mut self, ctx: &mut OperatorContext<'_, K, O>) -> Result<()> {
        self.0.end_input(ctx)
    }
}

/// A [`CoProcessFunction`] as the process function of the tagged inputs.
#[derive(Clone)]
struct CoProcess<F>(F);

impl<A, B, O, F: CoProcessFunction<A, B, O>> ProcessFunction<CoInput<A, B>, O> for CoProcess<F> {
    fn open(&mut self, ctx: &RuntimeContext) -> Result<()> {
        self.0.open(ctx)
    }

    fn process_element(
        &mut self,
        value: CoInput<A, B>,
        ctx: &mut OperatorContext<'_, (), O>,
    ) -> Result<()> {
        match value {
            CoInput::First(a) => self.0.process_element1(a, ctx),
            CoInput::Second(b) => self.0.process_element2(b, ctx),
        }
    }

    fn close(&mut self, ctx: &mut OperatorContext<'_, (), O>) -> Result<()> {
        self.0.close(ctx)
    }
}

/// A [`KeyedCoProcessFunction`] as the keyed process function of the tagged inputs.
#[derive(Clone)]
struct KeyedCoProcess<F>(F);

impl<K: Key, A, B, O, F: KeyedCoProcessFunction<K, A, B, O>>
    KeyedProcessFunction<K, CoInput<A, B>, O> for KeyedCoProcess<F>
{
    fn open(&mut self, state: &mut KeyedBackend<K>) -> Result<()> {
        self.0.open(state)
    }

    fn process_element(
        &mut self,
        value: CoInput<A, B>,
        ctx: &mut KeyedContext<'_, K, O>,
    ) -> Result<()> {
        match value {
            CoInput::First(a) => self.0.process_element1(a, ctx),
            CoInput::Second(b) => self.0.process_element2(b, ctx),
        }
    }

    fn on_timer(
        &mut self,
        timestamp: i64,
        domain: TimeDomain,
        ctx: &mut KeyedContext<'_, K, O>,
    ) -> Result<()> {
        self.0.on_timer(timestamp, domain, ctx)
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

/// An interval join being built ([`KeyedStream::interval_join`]): records `a` of the first
/// input and `b` of the second with equal keys are joined when
/// `a.ts + lower <= b.ts <= a.ts + upper` (either bound exclusive on request).
///
/// As Flink's `IntervalJoinOperator`: each input's records wait in keyed map state (by
/// timestamp) for partners of the other input; a record joins with every partner already
/// waiting, so each pair is produced once, whichever comes first, with the larger of the
/// two timestamps. A record behind the operator's watermark (the minimum of both inputs') is
/// late and dropped; a waiting record is removed when the watermark passes the last time a
/// partner could still come (its timestamp plus the interval's far end), so state stays
/// bounded by the interval. Records need timestamps. In batch mode nothing is late and a
/// key's records wait until its end.
pub struct IntervalJoin<K: Key, A: Data, B: Data> {
    keyed: KeyedConnectedStreams<K, A, B>,
    lower: i64,
    upper: i64,
    lower_exclusive: bool,
    upper_exclusive: bool,
}

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
struct IntervalJoinFunction<A, B, F> {
    /// Inclusive bounds of `b.ts - a.ts`.
    lower: i64,
    upper: i64,
    function: F,
    first: Option<MapState<(), i64, Vec<A>>>,
    second: Option<MapState<(), i64, Vec<B>>>,
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
        crate::Error::function("an interval join needs records with timestamps (assign them first)")
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
            return Err(crate::Error::Config(format!(
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
            return Err(crate::Error::function("an interval join was not opened"));
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
            return Err(crate::Error::function("an interval join was not opened"));
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
