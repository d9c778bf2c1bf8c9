//! What users implement for operators with two inputs: co-process functions (keyed or
//! not), [`TwoInputOperator`], and [`CoInput`], the tagged record both inputs become; with the
//! adapters that run each of them as a one-input operator over the tagged stream.

use typeinfo::TypeInfo;
use typeinfo_state::KeyedBackend;

use crate::error::Result;
use crate::operator::context::{RuntimeContext, TimeDomain};
use crate::types::Key;
use crate::user::keyed_process::{KeyedContext, KeyedProcessFunction};
use crate::user::one_input::{OneInputOperator, OperatorContext, ProcessFunction, StateContext};

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
/// life and the contexts of a [`OneInputOperator`](crate::user::one_input::OneInputOperator), with a method
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
    /// [`OneInputOperator::initialize_state`](crate::user::one_input::OneInputOperator::initialize_state).
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
pub(crate) struct TwoInput<Op>(pub(crate) Op);

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
pub(crate) struct CoProcess<F>(pub(crate) F);

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
pub(crate) struct KeyedCoProcess<F>(pub(crate) F);

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
