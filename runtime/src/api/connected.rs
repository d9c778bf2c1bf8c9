//! Connected streams: [`ConnectedStreams`] (co-map, co-flat-map, co-process) and, keyed by
//! both inputs, [`KeyedConnectedStreams`].

use std::sync::Arc;

use crate::api::handles::ConnectWith;
use crate::api::handles::ConnectedStreams;
use crate::api::handles::DataStream;
use crate::api::handles::KeyedConnectedStreams;
use crate::api::handles::KeyedStream;
use crate::types::{Data, Key};
use crate::user::two_input::CoInput;
use crate::user::two_input::CoProcessFunction;
use crate::user::two_input::KeyedCoProcessFunction;
use crate::user::two_input::TwoInputOperator;
use crate::user::two_input::{CoProcess, KeyedCoProcess, TwoInput};

impl<A: Data, B: Data> ConnectWith<A> for DataStream<B> {
    type Connected = ConnectedStreams<A, B>;

    fn connected_to(&self, first: &DataStream<A>) -> Self::Connected {
        ConnectedStreams {
            first: first.clone(),
            second: self.clone(),
        }
    }
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
            .name("Connect (input 1)")
            .at_input_parallelism();
        let second = self
            .second
            .map(CoInput::<A, B>::Second)
            .name("Connect (input 2)")
            .at_input_parallelism();
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
    pub(crate) fn tagged(&self) -> KeyedStream<K, CoInput<A, B>> {
        let (first, second) = (Arc::clone(&self.first), Arc::clone(&self.second));
        self.inputs
            .tagged()
            .key_by(move |record: &CoInput<A, B>| match record {
                CoInput::First(a) => first(a),
                CoInput::Second(b) => second(b),
            })
    }
}
