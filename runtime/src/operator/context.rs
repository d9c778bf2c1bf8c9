//! What functions and operators see of where they run ([`RuntimeContext`]) and the tags of
//! their side outputs ([`OutputTag`]).

use std::sync::Arc;

use typeinfo::SerializerConfig;

use crate::metrics::MetricGroup;
use crate::operator::contract::OperatorSetup;

/// What a function or operator knows about where it runs.
#[derive(Debug, Clone)]
pub struct RuntimeContext {
    job_name: String,
    operator_name: String,
    subtask: usize,
    parallelism: usize,
    max_parallelism: u32,
    metrics: MetricGroup,
    batch: bool,
}

impl RuntimeContext {
    pub(crate) fn new(setup: &OperatorSetup) -> Self {
        RuntimeContext {
            job_name: setup.job_name.clone(),
            operator_name: setup.name.clone(),
            subtask: setup.subtask,
            parallelism: setup.parallelism,
            max_parallelism: setup.max_parallelism,
            metrics: MetricGroup::new(&setup.name, setup.subtask, Arc::clone(&setup.job.metrics)),
            batch: setup.batch,
        }
    }

    /// Whether the job runs in batch mode ([`crate::config::RuntimeMode`], [`crate::batch::keyed`]): a
    /// keyed function then sees its key's records one key after another, sorted by
    /// timestamp, and its timers fire at the end of each key.
    pub fn is_batch(&self) -> bool {
        self.batch
    }

    /// The job's name (as given to `execute`).
    pub fn job_name(&self) -> &str {
        &self.job_name
    }
    /// The operator's name.
    pub fn operator_name(&self) -> &str {
        &self.operator_name
    }
    /// This subtask's index, `0..parallelism`.
    pub fn subtask_index(&self) -> usize {
        self.subtask
    }
    /// How many subtasks run the operator.
    pub fn parallelism(&self) -> usize {
        self.parallelism
    }
    /// The job's number of key groups.
    pub fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }
    /// Where to register metrics.
    pub fn metrics(&self) -> &MetricGroup {
        &self.metrics
    }
}

/// A tag naming a side output of `T` records (the late data of a window, or what a function
/// emits with [`OperatorContext`](crate::user::one_input::OperatorContext)'s `output`).
///
/// ```
/// use typeinfo_runtime::{OperatorContext, OutputTag, ProcessFunction, StreamExecutionEnvironment};
///
/// #[derive(Clone)]
/// struct Parse { bad: OutputTag<String> }
/// impl ProcessFunction<String, i64> for Parse {
///     fn process_element(&mut self, line: String, ctx: &mut OperatorContext<'_, (), i64>) -> typeinfo_runtime::Result<()> {
///         match line.parse() {
///             Ok(n) => ctx.collect(n),
///             Err(_) => ctx.output(&self.bad, line)?,
///         }
///         Ok(())
///     }
/// }
///
/// # fn main() -> typeinfo_runtime::Result<()> {
/// let env = StreamExecutionEnvironment::new();
/// let bad = OutputTag::<String>::new("unparsable");
/// let numbers = env
///     .from_collection(vec!["1".to_owned(), "x".to_owned(), "3".to_owned()])
///     .process(Parse { bad: bad.clone() });
/// let good = numbers.collect();
/// let rejected = numbers.side_output(&bad).collect();
/// env.execute("parse")?;
/// assert_eq!((good.take(), rejected.take()), (vec![1, 3], vec!["x".to_owned()]));
/// # Ok(())
/// # }
/// ```
///
/// A function emits to it with [`OperatorContext::output`](crate::user::one_input::OperatorContext::output); read it with
/// [`DataStream::side_output`](crate::api::handles::DataStream::side_output) on the function's result. Values go from the function to
/// the side output's readers as bytes written by `T`'s serializer (with the default
/// serializer configuration), so a function may emit to any number of tags of any types.
pub struct OutputTag<T: typeinfo::TypeInfo> {
    id: String,
    serializer: Arc<std::sync::OnceLock<Option<T::Serializer>>>,
}

impl<T: typeinfo::TypeInfo> std::fmt::Debug for OutputTag<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputTag")
            .field("id", &self.id)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: typeinfo::TypeInfo> Clone for OutputTag<T> {
    fn clone(&self) -> Self {
        OutputTag {
            id: self.id.clone(),
            serializer: Arc::clone(&self.serializer),
        }
    }
}

impl<T: typeinfo::TypeInfo> OutputTag<T> {
    /// A tag named `id`.
    pub fn new(id: impl Into<String>) -> Self {
        OutputTag {
            id: id.into(),
            serializer: Arc::new(std::sync::OnceLock::new()),
        }
    }

    /// The tag's name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A value's bytes for the tag's side output.
    pub(crate) fn encode(&self, value: &T) -> crate::error::Result<Vec<u8>> {
        let serializer = self.serializer().ok_or_else(|| {
            crate::error::Error::Config(format!(
                "side output `{}`: {} has no serializer",
                self.id,
                std::any::type_name::<T>()
            ))
        })?;
        let mut bytes = typeinfo::DataOutputView::new();
        typeinfo::TypeSerializer::serialize(serializer, value, &mut bytes)?;
        Ok(bytes.into_inner())
    }

    /// The serializer of the tag's values (default configuration), made once.
    pub(crate) fn serializer(&self) -> Option<&T::Serializer> {
        self.serializer
            .get_or_init(|| T::create_serializer(&SerializerConfig::default()).ok())
            .as_ref()
    }
}

/// Which clock a timer follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeDomain {
    /// Event time: fires when the watermark reaches the timer.
    EventTime,
    /// Processing time: fires when the wall clock reaches the timer.
    ProcessingTime,
}
