//! Window joins and co-groups of two streams: the builder chain
//! `a.join(&b).where_(ka).equal_to(kb).window(assigner)` and its `apply`.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::api::handles::{
    CoGroup, ConnectedStreams, DataStream, Join, KeyedConnectedStreams, TwoInputKeyed,
    TwoInputWhere, TwoInputWindowed, TwoInputWindows,
};
use crate::types::{Data, Key};
use crate::user::two_input::CoInput;
use crate::windowing::assigner::WindowAssigner;
use crate::windowing::evictor::Evictor;
use crate::windowing::trigger::Trigger;

impl<A: Data, B: Data, J> std::fmt::Debug for TwoInputWindows<A, B, J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoInputWindows").finish_non_exhaustive()
    }
}

impl<A: Data, B: Data, J> TwoInputWindows<A, B, J> {
    pub(crate) fn new(inputs: ConnectedStreams<A, B>) -> Self {
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
