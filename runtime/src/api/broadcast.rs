//! The handles of the broadcast state pattern: [`BroadcastStream`] and the streams connected
//! to it, keyed ([`KeyedBroadcastConnectedStreams`]) or not ([`BroadcastConnectedStreams`]).

use std::sync::Arc;

use crate::api::handles::{
    BroadcastConnectedStreams, BroadcastStream, ConnectWith, DataStream,
    KeyedBroadcastConnectedStreams,
};
use crate::operator::contract::KeyOf;
use crate::types::{Data, Key};
use crate::user::broadcast::{
    BroadcastOperator, BroadcastProcessFunction, Keyed, KeyedBroadcastProcessFunction, NonKeyed,
};
use crate::user::two_input::CoInput;

impl<T> Clone for BroadcastStream<T> {
    fn clone(&self) -> Self {
        BroadcastStream {
            stream: self.stream.clone(),
            states: Arc::clone(&self.states),
        }
    }
}

impl<T> std::fmt::Debug for BroadcastStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadcastStream")
            .field("stream", &self.stream)
            .field(
                "states",
                &self
                    .states
                    .iter()
                    .map(|s| s.state_name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl<B: Data> BroadcastStream<B> {
    /// The broadcast input tagged as the second input, sent to every subtask.
    fn tagged<A: Data>(&self) -> DataStream<CoInput<A, B>> {
        self.stream
            .map(CoInput::<A, B>::Second)
            .name("Connect (broadcast input)")
            .at_input_parallelism()
            .broadcast()
    }
}

impl<A: Data, B: Data> ConnectWith<A> for BroadcastStream<B> {
    type Connected = BroadcastConnectedStreams<A, B>;

    fn connected_to(&self, first: &DataStream<A>) -> Self::Connected {
        BroadcastConnectedStreams {
            first: first.clone(),
            broadcast: self.clone(),
        }
    }
}

impl<A, B> std::fmt::Debug for BroadcastConnectedStreams<A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadcastConnectedStreams")
            .field("first", &self.first)
            .field("broadcast", &self.broadcast)
            .finish()
    }
}

impl<A: Data, B: Data> BroadcastConnectedStreams<A, B> {
    /// Runs a [`BroadcastProcessFunction`] on both inputs.
    pub fn process<O: Data, F: BroadcastProcessFunction<A, B, O> + Clone>(
        &self,
        function: F,
    ) -> DataStream<O> {
        let first = self
            .first
            .map(CoInput::<A, B>::First)
            .name("Connect (input 1)")
            .at_input_parallelism();
        let held = KeyOf::Partly(Arc::new(|record: &CoInput<A, B>| match record {
            CoInput::First(_) => Some(()),
            CoInput::Second(_) => None,
        }));
        first
            .union(&[self.broadcast.tagged()])
            .transform_after_unkeyed(
                "Broadcast Process",
                format!("BroadcastProcess ({})", std::any::type_name::<F>()),
                held,
                NonKeyed(BroadcastOperator {
                    function,
                    states: Arc::clone(&self.broadcast.states),
                }),
            )
    }
}

impl<K, A, B> std::fmt::Debug for KeyedBroadcastConnectedStreams<K, A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedBroadcastConnectedStreams")
            .field("keyed", &self.keyed)
            .field("broadcast", &self.broadcast)
            .finish()
    }
}

impl<K: Key, A: Data, B: Data> KeyedBroadcastConnectedStreams<K, A, B> {
    /// Runs a [`KeyedBroadcastProcessFunction`]: the keyed input partitioned by its key (with
    /// the key's state and timers), the broadcast input to every subtask.
    pub fn process<O: Data, F: KeyedBroadcastProcessFunction<K, A, B, O> + Clone>(
        &self,
        function: F,
    ) -> DataStream<O> {
        let (stream, key) = self.keyed.parts();
        let selector = KeyOf::Partly(Arc::new(move |record: &CoInput<A, B>| match record {
            CoInput::First(a) => Some(key(a)),
            CoInput::Second(_) => None,
        }));
        let first = stream
            .map(CoInput::<A, B>::First)
            .name("Connect (input 1)")
            .at_input_parallelism()
            .partitioned_by_key(selector.clone());
        first.union(&[self.broadcast.tagged()]).transform_keyed(
            "Keyed Broadcast Process",
            format!("KeyedBroadcastProcess ({})", std::any::type_name::<F>()),
            selector,
            Keyed(BroadcastOperator {
                function,
                states: Arc::clone(&self.broadcast.states),
            }),
        )
    }
}
