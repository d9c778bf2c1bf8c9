//! The plan of a job: the transformations the API calls recorded, and the stream graph they
//! become. Plain data (names, uids, parallelism, edges, partitioners, the types of outputs);
//! nothing here builds or runs anything, and nothing here imports the layers that do.
//!
//! Every operator call (`map`, `window(..).aggregate(..)`, a source, a sink) records one
//! [`Transformation`] with the inputs it reads: the producing transformation, its output
//! port (0 is the main output, `1 + i` the `i`-th side output), and how the records are
//! partitioned on the way (`key_by`, `rebalance` and `broadcast` only set this; `union`
//! only lists several inputs). [`translate`] turns the list into a [`StreamGraph`]: one
//! node per transformation (same ids, so operators without a uid keep their checkpoint
//! directory `node-<id>` across runs of the same program), and one edge per input.

use std::collections::HashMap;
use std::fmt::{self, Write as _};

use typeinfo::SerializerConfig;

use crate::config::{ExecutionConfig, RuntimeMode};
use crate::error::{Error, Result};

/// The output port of every operator that carries its functions' tagged side outputs (as
/// bytes, read back by a node per tag that reads them).
pub(crate) const TAGGED_PORT: usize = 2;

/// The type of a node's output, and a check that its serializer can be created with the
/// job's serializer config (a disabled generic type fails at graph build, named).
#[derive(Clone, Copy)]
pub(crate) struct OutputType {
    pub(crate) name: &'static str,
    pub(crate) check: fn(&SerializerConfig) -> typeinfo::Result<()>,
}

impl OutputType {
    pub(crate) fn of<T: crate::types::Data>() -> Self {
        OutputType {
            name: std::any::type_name::<T>(),
            check: |config| T::create_serializer(config).map(drop),
        }
    }
}

impl fmt::Debug for OutputType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// How an input's records reach the consumer's subtasks (as the API call asked).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Partitioning {
    /// Forward to the subtask with the same index when the parallelism is the same, round
    /// robin otherwise (Flink's default).
    Default,
    /// By the key group of the record's key.
    Hash { key_type: OutputType },
    /// Round robin.
    Rebalance,
    /// Every record to every subtask.
    Broadcast,
}

/// One input of a transformation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Input {
    /// The producing transformation.
    pub(crate) producer: usize,
    /// Its output port.
    pub(crate) port: usize,
    pub(crate) partitioning: Partitioning,
}

/// Whether an operator chains with its neighbours (Flink's `ChainingStrategy`): set by
/// [`start_new_chain`](crate::DataStream::start_new_chain) and
/// [`disable_chaining`](crate::DataStream::disable_chaining).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Chaining {
    /// Chains with its input and its consumer where the rules allow (the default).
    #[default]
    Always,
    /// Begins a chain: does not chain with its input, may with its consumer.
    Head,
    /// Chains with neither.
    Never,
}

/// What a transformation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeKind {
    Source,
    Operator,
    Sink,
}

/// One API call that adds an operator.
#[derive(Debug, Clone)]
pub(crate) struct Transformation {
    pub(crate) id: usize,
    pub(crate) kind: NodeKind,
    pub(crate) name: String,
    pub(crate) uid: Option<String>,
    pub(crate) parallelism: Option<u32>,
    /// What the operator does, for [`StreamGraph::explain`].
    pub(crate) description: String,
    pub(crate) inputs: Vec<Input>,
    /// The main output's type (none for sinks).
    pub(crate) output: Option<OutputType>,
    /// Side-output tags: tag `i` is output port `1 + i`.
    pub(crate) side_outputs: Vec<String>,
    /// A setting the operator refuses (checked when the graph is built).
    pub(crate) invalid: Option<String>,
    /// The operator runs at parallelism 1 only (`window_all`): another is refused.
    pub(crate) non_parallel: bool,
    /// A source: whether it is bounded (batch mode needs every source bounded).
    pub(crate) bounded: Option<bool>,
    /// A source whose splits do not depend on its parallelism (see
    /// [`Source::rescalable`](crate::user::source::Source::rescalable)).
    pub(crate) rescalable: bool,
    /// Whether it chains with its neighbours.
    pub(crate) chaining: Chaining,
    /// Without a parallelism of its own, it runs at its inputs' (when they agree) instead
    /// of the default one: the timestamp assigner (Flink's rule), and the adapters `connect`
    /// puts before a two-input operator, which Flink does not have (its two-input operators
    /// read their inputs directly), so that they forward records in order instead of
    /// spreading them round robin.
    pub(crate) parallelism_of_input: bool,
}

impl Transformation {
    /// The output port of side-output `tag`.
    pub(crate) fn side_port(&self, tag: &str) -> Option<usize> {
        self.side_outputs
            .iter()
            .position(|t| t == tag)
            .map(|i| i + 1)
    }
}

/// How an edge distributes records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionerKind {
    /// Each subtask sends to the subtask with its own index (same parallelism, same worker).
    Forward,
    /// By key group: `subtask = key_group * parallelism / max_parallelism`.
    Hash,
    /// Round robin over the consumer's subtasks.
    Rebalance,
    /// Every record to every subtask.
    Broadcast,
}

impl fmt::Display for PartitionerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PartitionerKind::Forward => "FORWARD",
            PartitionerKind::Hash => "HASH",
            PartitionerKind::Rebalance => "REBALANCE",
            PartitionerKind::Broadcast => "BROADCAST",
        })
    }
}

/// An operator of the stream graph, run by `parallelism` subtasks.
#[derive(Debug, Clone)]
pub struct StreamNode {
    pub(crate) id: usize,
    pub(crate) kind: NodeKind,
    pub(crate) name: String,
    pub(crate) uid: Option<String>,
    pub(crate) parallelism: u32,
    pub(crate) description: String,
    pub(crate) output_type: Option<&'static str>,
    pub(crate) side_outputs: Vec<String>,
    /// A source that may restore at another parallelism.
    pub(crate) rescalable: bool,
    pub(crate) chaining: Chaining,
    /// The node chained after this one (it consumes this node's main output in the same
    /// timely operator; see [`StreamGraph::chains`]).
    pub(crate) chained_next: Option<usize>,
    /// This node is chained to its input (built by the chain's head).
    pub(crate) chained: bool,
}

impl StreamNode {
    /// The node's id (its index in [`StreamGraph::nodes`]).
    pub fn id(&self) -> usize {
        self.id
    }
    /// The operator's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The operator's stable id, if the job set one.
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }
    /// How many subtasks run the operator.
    pub fn parallelism(&self) -> u32 {
        self.parallelism
    }
    /// What the operator does.
    pub fn description(&self) -> &str {
        &self.description
    }
    /// The Rust type of the operator's records (none for sinks).
    pub fn output_type(&self) -> Option<&'static str> {
        self.output_type
    }
    /// The operator chained after this one: it runs in the same subtask, handed this
    /// operator's records by value (see [`StreamGraph::chains`]).
    pub fn chained_next(&self) -> Option<usize> {
        self.chained_next
    }
}

/// An edge of the stream graph.
#[derive(Debug, Clone)]
pub struct StreamEdge {
    pub(crate) source: usize,
    pub(crate) source_port: usize,
    pub(crate) target: usize,
    /// The position of this edge among the target's inputs.
    pub(crate) input: usize,
    pub(crate) partitioner: PartitionerKind,
    pub(crate) key_type: Option<&'static str>,
}

impl StreamEdge {
    /// The producing node.
    pub fn source(&self) -> usize {
        self.source
    }
    /// The producing node's output (0 is the main output, `1 + i` its `i`-th side output).
    pub fn source_port(&self) -> usize {
        self.source_port
    }
    /// The consuming node.
    pub fn target(&self) -> usize {
        self.target
    }
    /// How records are distributed.
    pub fn partitioner(&self) -> PartitionerKind {
        self.partitioner
    }
    /// The key type of a hash edge.
    pub fn key_type(&self) -> Option<&'static str> {
        self.key_type
    }
}

/// The plan of a job: operators and the edges between them.
#[derive(Debug, Clone)]
pub struct StreamGraph {
    pub(crate) nodes: Vec<StreamNode>,
    pub(crate) edges: Vec<StreamEdge>,
    pub(crate) max_parallelism: u32,
    pub(crate) batch: bool,
}

impl StreamGraph {
    /// Whether the job runs in batch mode (see [`crate::batch::keyed`]).
    pub fn is_batch(&self) -> bool {
        self.batch
    }

    /// The operators, in topological order.
    pub fn nodes(&self) -> &[StreamNode] {
        &self.nodes
    }
    /// The edges.
    pub fn edges(&self) -> &[StreamEdge] {
        &self.edges
    }
    /// The number of key groups.
    pub fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }
    /// The number of workers the job needs: its highest operator parallelism.
    pub fn workers(&self) -> u32 {
        self.nodes.iter().map(|n| n.parallelism).max().unwrap_or(1)
    }
    /// The edges into `node`, in the order of its inputs.
    pub(crate) fn inputs(&self, node: usize) -> Vec<&StreamEdge> {
        let mut inputs: Vec<&StreamEdge> = self.edges.iter().filter(|e| e.target == node).collect();
        inputs.sort_by_key(|e| e.input);
        inputs
    }

    /// The operator chains: each a list of nodes, head first, that run as one timely
    /// operator per subtask, each handing its main output to the next by value (no
    /// serialization, no channel between them; each keeps its own state, checkpoint part,
    /// watermark and metrics). Every node is in exactly one chain (most in a chain of one).
    ///
    /// Flink's rules (`StreamingJobGraphGenerator.isChainable`): a node chains to its input
    /// when it has exactly one input, a forward edge from its producer's main output (same
    /// parallelism), the producer's main output has no other consumer, neither is a sink
    /// feeding on, chaining is on for the job
    /// ([`disable_operator_chaining`](crate::StreamExecutionEnvironment::disable_operator_chaining))
    /// and neither operator asked otherwise.
    pub fn chains(&self) -> Vec<Vec<usize>> {
        self.nodes
            .iter()
            .filter(|n| !n.chained)
            .map(|head| {
                let mut chain = vec![head.id];
                let mut at = head;
                while let Some(next) = at.chained_next {
                    chain.push(next);
                    at = &self.nodes[next];
                }
                chain
            })
            .collect()
    }

    /// Whether `node` is a source.
    pub(crate) fn is_source(&self, node: usize) -> bool {
        self.nodes
            .get(node)
            .is_some_and(|n| n.kind == NodeKind::Source)
    }

    /// The plan in words: one line per operator, then its inputs.
    pub fn explain(&self) -> String {
        let mut s = format!(
            "Stream graph ({} operators, max parallelism {}{})\n",
            self.nodes.len(),
            self.max_parallelism,
            if self.batch {
                ", batch mode: keyed inputs sorted"
            } else {
                ""
            }
        );
        for n in &self.nodes {
            let _ = write!(s, "[{}] {} (parallelism {}", n.id, n.name, n.parallelism);
            if let Some(uid) = &n.uid {
                let _ = write!(s, ", uid \"{uid}\"");
            }
            let _ = writeln!(s, ")");
            if let Some(next) = n.chained_next {
                let _ = writeln!(s, "    chained to: [{next}]");
            }
            let _ = writeln!(s, "    operator: {}", n.description);
            if let Some(t) = n.output_type {
                let _ = writeln!(s, "    output: {t}");
            }
            for e in self.inputs(n.id) {
                let port = match e.source_port.checked_sub(1) {
                    _ if e.source_port == TAGGED_PORT => " (tagged side outputs)".to_owned(),
                    Some(i) => format!(
                        " (side output \"{}\")",
                        self.nodes[e.source]
                            .side_outputs
                            .get(i)
                            .map_or("?", String::as_str)
                    ),
                    None => String::new(),
                };
                match e.key_type {
                    Some(k) => {
                        let _ = writeln!(
                            s,
                            "    input: [{}]{port} --{} by {k}-->",
                            e.source, e.partitioner
                        );
                    }
                    None => {
                        let _ =
                            writeln!(s, "    input: [{}]{port} --{}-->", e.source, e.partitioner);
                    }
                }
            }
        }
        s
    }
}

impl StreamGraph {
    /// The plan as a Graphviz DOT digraph (`dot -Tsvg`): one box per operator with its name,
    /// parallelism and uid, one arrow per edge labelled with its partitioner (and key type),
    /// side outputs dashed, the edges inside an operator chain bold and labelled `chained`.
    ///
    /// # Examples
    ///
    /// ```
    /// use typeinfo_runtime::StreamExecutionEnvironment;
    ///
    /// # fn main() -> typeinfo_runtime::Result<()> {
    /// let env = StreamExecutionEnvironment::new();
    /// env.set_parallelism(2);
    /// let _ = env
    ///     .from_collection(vec![('a', 1i64), ('b', 2)])
    ///     .key_by(|e: &(char, i64)| e.0)
    ///     .reduce(|x, y| (x.0, x.1 + y.1))
    ///     .uid("totals")
    ///     .collect();
    /// let dot = env.stream_graph()?.to_dot(); // the plan, without running the job
    /// assert_eq!(
    ///     dot,
    ///     r#"digraph job {
    ///     rankdir=LR;
    ///     node [shape=box, style=rounded];
    ///     n0 [label="Collection Source\nparallelism 1"];
    ///     n1 [label="Keyed Reduce\nparallelism 2\nuid totals"];
    ///     n2 [label="Collect Sink\nparallelism 2"];
    ///     n0 -> n1 [label="HASH by char"];
    ///     n1 -> n2 [label="FORWARD, chained", style=bold];
    /// }
    /// "#
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub fn to_dot(&self) -> String {
        /// Escapes text for a DOT string (quotes and backslashes; line breaks become spaces).
        fn escape(s: &str) -> String {
            let mut q = String::with_capacity(s.len());
            for c in s.chars() {
                match c {
                    '"' | '\\' => {
                        q.push('\\');
                        q.push(c);
                    }
                    '\n' | '\r' => q.push(' '),
                    c => q.push(c),
                }
            }
            q
        }
        let mut s =
            String::from("digraph job {\n    rankdir=LR;\n    node [shape=box, style=rounded];\n");
        for n in &self.nodes {
            let mut lines = vec![escape(&n.name), format!("parallelism {}", n.parallelism)];
            if let Some(uid) = &n.uid {
                lines.push(format!("uid {}", escape(uid)));
            }
            // `\n` inside a DOT string is a line break.
            let _ = writeln!(s, "    n{} [label=\"{}\"];", n.id, lines.join("\\n"));
        }
        for e in &self.edges {
            let mut label = e.partitioner.to_string();
            if let Some(k) = e.key_type {
                let _ = write!(label, " by {k}");
            }
            let chained = e.source_port == 0 && self.nodes[e.source].chained_next == Some(e.target);
            if chained {
                label.push_str(", chained");
            }
            let style = if e.source_port > 0 {
                ", style=dashed"
            } else if chained {
                ", style=bold"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "    n{} -> n{} [label=\"{}\"{style}];",
                e.source,
                e.target,
                escape(&label)
            );
        }
        s.push_str("}\n");
        s
    }
}

impl fmt::Display for StreamGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

/// Translates the transformation list into the stream graph.
pub(crate) fn translate(
    transformations: &[Transformation],
    config: &ExecutionConfig,
) -> Result<StreamGraph> {
    config.validate()?;
    let mut nodes: Vec<StreamNode> = Vec::with_capacity(transformations.len());
    let mut edges = Vec::new();
    for (id, t) in transformations.iter().enumerate() {
        debug_assert_eq!(t.id, id, "transformations are numbered in order");
        nodes.push(node(id, t, config, &nodes)?);
        for (position, input) in t.inputs.iter().enumerate() {
            edges.push(edge(&nodes, id, t, position, input, config)?);
        }
    }
    check_uids(&nodes)?;
    chain(&mut nodes, &edges, config);
    let batch = batch_mode(transformations, config)?;
    Ok(StreamGraph {
        nodes,
        edges,
        max_parallelism: config.max_parallelism(),
        batch,
    })
}

/// The node of transformation `t` (numbered `id`), its output type and parallelism checked.
fn node(
    id: usize,
    t: &Transformation,
    config: &ExecutionConfig,
    before: &[StreamNode],
) -> Result<StreamNode> {
    if let Some(problem) = &t.invalid {
        return Err(Error::Config(format!("operator `{}`: {problem}", t.name)));
    }
    if let Some(output) = t.output {
        (output.check)(&config.serializer_config).map_err(|source| Error::Type {
            operator: t.name.clone(),
            source,
        })?;
    }
    let parallelism = t
        .parallelism
        .or_else(|| {
            t.parallelism_of_input
                .then(|| inputs_parallelism(t, before))
                .flatten()
        })
        .unwrap_or(config.parallelism);
    if parallelism == 0 || parallelism > config.max_parallelism() {
        return Err(Error::Config(format!(
            "operator `{}` has parallelism {parallelism}; it must be between 1 and the max parallelism {}",
            t.name,
            config.max_parallelism()
        )));
    }
    Ok(StreamNode {
        id,
        kind: t.kind,
        name: t.name.clone(),
        uid: t.uid.clone(),
        parallelism,
        description: t.description.clone(),
        output_type: t.output.map(|o| o.name),
        side_outputs: t.side_outputs.clone(),
        rescalable: t.rescalable,
        chaining: t.chaining,
        chained_next: None,
        chained: false,
    })
}

/// The parallelism every input of `t` has, if they agree.
fn inputs_parallelism(t: &Transformation, before: &[StreamNode]) -> Option<u32> {
    let mut all = t
        .inputs
        .iter()
        .map(|i| before.get(i.producer).map(|n| n.parallelism));
    let first = all.next().flatten()?;
    all.all(|p| p == Some(first)).then_some(first)
}

/// Links each node to the one chained after it (see [`StreamGraph::chains`]).
fn chain(nodes: &mut [StreamNode], edges: &[StreamEdge], config: &ExecutionConfig) {
    if !config.chaining {
        return;
    }
    for e in edges {
        let (up, down) = (&nodes[e.source], &nodes[e.target]);
        let chainable = e.partitioner == PartitionerKind::Forward
            && e.source_port == 0
            && up.parallelism == down.parallelism
            && up.kind != NodeKind::Sink
            && down.kind != NodeKind::Source
            && up.chaining != Chaining::Never
            && down.chaining == Chaining::Always
            && edges.iter().filter(|o| o.target == e.target).count() == 1
            && edges
                .iter()
                .filter(|o| o.source == e.source && o.source_port == 0)
                .count()
                == 1;
        if chainable {
            nodes[e.source].chained_next = Some(e.target);
            nodes[e.target].chained = true;
        }
    }
}

/// The edge into input `position` of node `id` (the last of `nodes`), with its partitioner:
/// forward between equal parallelisms unless the input asks for another, the key's type
/// checked for a hash edge.
fn edge(
    nodes: &[StreamNode],
    id: usize,
    t: &Transformation,
    position: usize,
    input: &Input,
    config: &ExecutionConfig,
) -> Result<StreamEdge> {
    let producer = nodes
        .get(input.producer)
        .filter(|_| input.producer < id)
        .ok_or_else(|| Error::Graph(format!("unknown transformation {}", input.producer)))?;
    let parallelism = nodes[id].parallelism;
    let (partitioner, key_type) = match input.partitioning {
        Partitioning::Default if producer.parallelism == parallelism => {
            (PartitionerKind::Forward, None)
        }
        Partitioning::Default | Partitioning::Rebalance => (PartitionerKind::Rebalance, None),
        Partitioning::Broadcast => (PartitionerKind::Broadcast, None),
        Partitioning::Hash { key_type } => {
            (key_type.check)(&config.serializer_config).map_err(|source| Error::Type {
                operator: t.name.clone(),
                source,
            })?;
            (PartitionerKind::Hash, Some(key_type.name))
        }
    };
    Ok(StreamEdge {
        source: input.producer,
        source_port: input.port,
        target: id,
        input: position,
        partitioner,
        key_type,
    })
}

/// Every uid is usable as a directory name and a word of `_metadata`, and names one
/// operator.
fn check_uids(nodes: &[StreamNode]) -> Result<()> {
    let mut uids = HashMap::new();
    for n in nodes {
        let Some(uid) = &n.uid else {
            continue;
        };
        // A uid names the operator's directory in checkpoints and a word of their
        // `_metadata`: no separators, no spaces.
        let bad = |c: char| c.is_whitespace() || c.is_control() || c == '/' || c == '\\';
        if uid.is_empty() || uid.contains(bad) || uid == "." || uid == ".." {
            return Err(Error::Graph(format!(
                "uid \"{}\" of `{}` is not usable: a uid must be non-empty, without spaces, \
                 control characters, `/` or `\\`",
                uid.escape_debug(),
                n.name
            )));
        }
        if let Some(other) = uids.insert(uid.clone(), n.name.clone()) {
            return Err(Error::Graph(format!(
                "uid \"{uid}\" is used by both `{other}` and `{}`",
                n.name
            )));
        }
    }
    Ok(())
}

/// Whether the job runs in batch mode: asked for (every source must then be bounded; the
/// first that is not is named), or automatic with every source bounded. A batch job takes
/// no savepoint and starts from none (it has no checkpoints).
fn batch_mode(transformations: &[Transformation], config: &ExecutionConfig) -> Result<bool> {
    let unbounded = transformations
        .iter()
        .find(|t| t.kind == NodeKind::Source && t.bounded != Some(true));
    let batch = match (config.runtime_mode, unbounded) {
        (RuntimeMode::Streaming, _) => false,
        (RuntimeMode::Batch, Some(t)) => {
            return Err(Error::Graph(format!(
                "runtime mode BATCH needs bounded sources, and source `{}` ({}) is unbounded \
                 (a user's source says it is bounded with `Source::boundedness`)",
                t.name, t.description
            )));
        }
        (RuntimeMode::Batch, None) => true,
        (RuntimeMode::Automatic, unbounded) => unbounded.is_none(),
    };
    if batch {
        if let Some(restore) = &config.restore {
            return Err(Error::Config(format!(
                "runtime mode BATCH does not restore from checkpoints or savepoints (asked to restore from {})",
                restore.path.display()
            )));
        }
        if config.stop_with_savepoint.is_some() {
            return Err(Error::Config(
                "runtime mode BATCH takes no savepoints: stop with savepoint needs STREAMING"
                    .into(),
            ));
        }
    }
    Ok(batch)
}
