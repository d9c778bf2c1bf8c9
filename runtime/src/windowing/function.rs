//! Functions over a window's contents with a context ([`ProcessWindowFunction`], Flink's
//! `ProcessWindowFunction`): the window, the watermark and the wall clock, keyed state per
//! window and per key, side outputs and the runtime context.
//!
//! Per-window state is keyed state with the window as namespace; state registered with
//! [`WindowFunctionSetup::per_window`] is cleared by the runtime when the window is cleaned
//! up (after [`ProcessWindowFunction::clear`], which Flink leaves to the function). Global
//! state is keyed state with the namespace `()`: it lives as long as the key.

use std::fmt;

use typeinfo_state::{KeyedBackend, StateId};

use crate::error::Result;
use crate::operator::context::{OutputTag, RuntimeContext};
use crate::operator::contract::{now_ms, SideRecord};
use crate::types::{Data, Key};
use crate::windowing::window::Window;

/// Where a [`ProcessWindowFunction`] registers its state, once per subtask.
pub struct WindowFunctionSetup<'a, K: Key, W: Window> {
    pub(crate) backend: &'a mut KeyedBackend<K>,
    pub(crate) per_window: &'a mut Vec<StateId>,
    pub(crate) runtime: &'a RuntimeContext,
    pub(crate) _window: std::marker::PhantomData<fn() -> W>,
}

impl<K: Key, W: Window> fmt::Debug for WindowFunctionSetup<'_, K, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowFunctionSetup")
            .field("per_window", &self.per_window)
            .finish_non_exhaustive()
    }
}

impl<K: Key, W: Window> WindowFunctionSetup<'_, K, W> {
    /// The subtask's keyed state: register per-window states (namespace `W`) and global
    /// ones (namespace `()`) here.
    pub fn keyed_state(&mut self) -> &mut KeyedBackend<K> {
        self.backend
    }
    /// Marks the state `id` (a state registered with namespace `W`; pass its handle's
    /// `id()`) as per-window: the runtime clears a window's entry when it cleans the
    /// window up.
    pub fn per_window(&mut self, id: StateId) {
        if !self.per_window.contains(&id) {
            self.per_window.push(id);
        }
    }
    /// Where the function runs.
    pub fn runtime(&self) -> &RuntimeContext {
        self.runtime
    }
}

/// What a [`ProcessWindowFunction`] sees while a window fires or is cleared.
pub struct WindowContext<'a, K: Key, W: Window, O> {
    pub(crate) key: &'a K,
    pub(crate) window: &'a W,
    pub(crate) watermark: i64,
    pub(crate) backend: &'a mut KeyedBackend<K>,
    pub(crate) out: &'a mut Vec<O>,
    pub(crate) tagged: &'a mut Vec<(i64, SideRecord)>,
    pub(crate) runtime: &'a RuntimeContext,
}

impl<K: Key, W: Window, O> fmt::Debug for WindowContext<'_, K, W, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowContext")
            .field("window", self.window)
            .field("watermark", &self.watermark)
            .finish_non_exhaustive()
    }
}

impl<K: Key, W: Window, O> WindowContext<'_, K, W, O> {
    /// The window's key.
    pub fn key(&self) -> &K {
        self.key
    }
    /// The window.
    pub fn window(&self) -> &W {
        self.window
    }
    /// The operator's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }
    /// The wall clock (ms since the Unix epoch).
    pub fn current_processing_time(&self) -> i64 {
        now_ms()
    }
    /// Keyed state of the window's key: per-window state with the window as namespace
    /// ([`window`](Self::window)), global per-key state with `()`.
    pub fn state(&mut self) -> &mut KeyedBackend<K> {
        self.backend
    }
    /// Emits a result (its timestamp is the window's max timestamp).
    pub fn collect(&mut self, value: O) {
        self.out.push(value);
    }
    /// Emits `value` to the side output `tag` (with the window's max timestamp).
    ///
    /// # Errors
    ///
    /// The tag's type has no serializer, or refuses the value.
    pub fn output<S: Data>(&mut self, tag: &OutputTag<S>, value: S) -> Result<()> {
        let bytes = tag.encode(&value)?;
        self.tagged
            .push((self.window.max_timestamp(), (tag.id().to_owned(), bytes)));
        Ok(())
    }
    /// Where the function runs.
    pub fn runtime(&self) -> &RuntimeContext {
        self.runtime
    }
}

/// A function over the elements of a firing window, with a context (Flink's
/// `ProcessWindowFunction`). With `aggregate_process`/`reduce_process` it gets the one
/// incrementally computed result instead of the elements. Each subtask runs its own clone.
///
/// ```
/// use typeinfo_runtime::window::TimeWindow;
/// use typeinfo_runtime::{
///     ProcessWindowFunction, StreamExecutionEnvironment, TumblingEventTimeWindows,
///     WatermarkStrategy, WindowContext, WindowFunctionSetup,
/// };
/// use typeinfo_state::{KeyedStateBackend, ValueState, ValueStateDescriptor};
///
/// /// Emits each window's count with the key's running total over all its windows.
/// #[derive(Clone, Default)]
/// struct Running { total: Option<ValueState<(), u64>> }
///
/// impl ProcessWindowFunction<String, String, String, TimeWindow> for Running {
///     fn open(&mut self, setup: &mut WindowFunctionSetup<'_, String, TimeWindow>) -> typeinfo_runtime::Result<()> {
///         self.total = Some(setup.keyed_state().value_state(&ValueStateDescriptor::new("total"))?);
///         Ok(())
///     }
///     fn process(&mut self, key: &String, elements: Vec<String>, ctx: &mut WindowContext<'_, String, TimeWindow, String>) -> typeinfo_runtime::Result<()> {
///         let total = self.total.as_ref().expect("opened");
///         let sum = total.value(ctx.state(), &())?.unwrap_or(0) + elements.len() as u64;
///         total.update(ctx.state(), &(), sum)?;
///         let w = *ctx.window();
///         ctx.collect(format!("{key} [{}, {}): {} of {sum}", w.start, w.end, elements.len()));
///         Ok(())
///     }
/// }
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let lines = env
///     .from_collection(vec![("a".to_owned(), 1i64), ("a".to_owned(), 2), ("a".to_owned(), 12)])
///     .assign_timestamps_and_watermarks(WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|e: &(String, i64), _| e.1))
///     .map(|(k, _)| k)
///     .key_by(|k: &String| k.clone())
///     .window(TumblingEventTimeWindows::of_millis(10))
///     .process(Running::default())
///     .collect();
/// env.execute("running")?;
/// assert_eq!(lines.take(), ["a [0, 10): 2 of 2", "a [10, 20): 1 of 3"]);
/// # Ok(())
/// # }
/// ```
pub trait ProcessWindowFunction<K: Key, I, O, W: Window>: Send + Sync + 'static {
    /// Registers the function's state (once per subtask, before a restore fills it).
    ///
    /// # Errors
    ///
    /// A state that cannot be registered.
    fn open(&mut self, _setup: &mut WindowFunctionSetup<'_, K, W>) -> Result<()> {
        Ok(())
    }

    /// The window fired: `elements` are its contents (or the one incremental result).
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn process(
        &mut self,
        key: &K,
        elements: Vec<I>,
        ctx: &mut WindowContext<'_, K, W, O>,
    ) -> Result<()>;

    /// The window is cleaned up: clear the per-window state not marked with
    /// [`WindowFunctionSetup::per_window`].
    ///
    /// # Errors
    ///
    /// Any error fails the job.
    fn clear(&mut self, _ctx: &mut WindowContext<'_, K, W, O>) -> Result<()> {
        Ok(())
    }
}
