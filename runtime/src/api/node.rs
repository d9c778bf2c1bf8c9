//! What every stream handle of the API shares: the node an API call adds to the plan (its
//! transformation and typed builder) and the producer a handle reads from.

use std::sync::Arc;

use crate::exec::compile::{ChainSlot, Partition};
use crate::plan::{Input, NodeKind, OutputType, Partitioning, Transformation};

pub(crate) type Selector<T, K> = Arc<dyn Fn(&T) -> K + Send + Sync>;

/// What an API call says about the operator it adds, besides its function.
pub(crate) struct NodeSpec {
    pub(crate) kind: NodeKind,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) parallelism: Option<u32>,
    pub(crate) side_outputs: Vec<String>,
    pub(crate) invalid: Option<String>,
    pub(crate) non_parallel: bool,
    pub(crate) bounded: Option<bool>,
    pub(crate) rescalable: bool,
}

impl NodeSpec {
    pub(crate) fn new(kind: NodeKind, name: &str, description: impl Into<String>) -> Self {
        NodeSpec {
            kind,
            name: name.to_owned(),
            description: description.into(),
            parallelism: None,
            side_outputs: Vec::new(),
            invalid: None,
            non_parallel: false,
            bounded: None,
            rescalable: false,
        }
    }

    pub(crate) fn transformation(
        self,
        inputs: Vec<Input>,
        output: Option<OutputType>,
    ) -> Transformation {
        Transformation {
            id: 0,
            kind: self.kind,
            name: self.name,
            uid: None,
            parallelism: self.parallelism,
            description: self.description,
            inputs,
            output,
            side_outputs: self.side_outputs,
            invalid: self.invalid,
            non_parallel: self.non_parallel,
            bounded: self.bounded,
            rescalable: self.rescalable,
            chaining: Default::default(),
            parallelism_of_input: false,
        }
    }
}

/// One producer of a stream's records, with how they are partitioned on the way to the
/// next operator: typed (the router of a key) and as plan data.
pub(crate) struct Producer<T> {
    pub(crate) node: usize,
    pub(crate) port: usize,
    pub(crate) partition: Partition<T>,
    pub(crate) partitioning: Partitioning,
    /// Where the operators reading the producer's main output register (none for a side
    /// output: nothing is chained to one).
    pub(crate) chain: Option<Arc<ChainSlot<T>>>,
}

impl<T> Clone for Producer<T> {
    fn clone(&self) -> Self {
        Producer {
            node: self.node,
            port: self.port,
            partition: self.partition.clone(),
            partitioning: self.partitioning,
            chain: self.chain.clone(),
        }
    }
}
