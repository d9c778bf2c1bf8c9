//! The transformation list and the stream graph it becomes.
//!
//! Every API call appends one [`Transformation`]. [`translate`] walks the list through one
//! translator per transformation kind: sources, operators and sinks become [`StreamNode`]s
//! (with their operator factory and the serializer of their output, created here with the
//! job's serializer config); unions, partitions (`key_by`, `rebalance`, `broadcast`) and side
//! outputs are virtual and only shape the [`StreamEdge`]s of the nodes that consume them.

use std::any::{type_name, Any};
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use typeinfo::SerializerConfig;

use crate::env::ExecutionConfig;
use crate::error::{Error, Result};
use crate::exec::BuildCtx;
use crate::Data;

/// Builds a node's timely operator on one worker.
pub(crate) trait NodeFactory: Send + Sync {
    /// What the operator does, for [`StreamGraph::explain`].
    fn describe(&self) -> String;
    /// The directory a file sink writes to.
    fn output_dir(&self) -> Option<&std::path::Path> {
        None
    }
    /// Checks the operator's settings (window sizes, ...) when the graph is built.
    fn validate(&self) -> Result<()> {
        Ok(())
    }
    /// Builds the operator from its input edges and registers its output streams.
    fn build<'s>(
        &self,
        ctx: &mut BuildCtx<'s>,
        node: &StreamNode,
        inputs: &[&StreamEdge],
    ) -> Result<()>;
}

/// The type of a node's output, and how to make its serializer.
#[derive(Clone, Copy)]
pub(crate) struct OutputType {
    pub(crate) name: &'static str,
    pub(crate) create: fn(&SerializerConfig) -> typeinfo::Result<Arc<dyn Any + Send + Sync>>,
}

impl OutputType {
    pub(crate) fn of<T: Data>() -> Self {
        OutputType {
            name: type_name::<T>(),
            create: |config| Ok(Arc::new(T::create_serializer(config)?)),
        }
    }
}

/// How records move from one operator's subtasks to the next.
#[derive(Clone)]
pub(crate) enum Partitioner {
    /// The default: each subtask to the same subtask, or round robin when parallelism differs.
    Default,
    /// By the key group of the record's key.
    Hash {
        key_type: OutputType,
        /// A `RouterFactory<T>` of the stream's record type.
        router: Arc<dyn Any + Send + Sync>,
    },
    Rebalance,
    Broadcast,
}

/// A transformation: one API call.
pub(crate) struct Transformation {
    pub(crate) id: usize,
    pub(crate) name: String,
    pub(crate) uid: Option<String>,
    pub(crate) parallelism: Option<u32>,
    pub(crate) kind: Kind,
}

pub(crate) enum Kind {
    Source {
        factory: Arc<dyn NodeFactory>,
        output: OutputType,
    },
    Operator {
        input: usize,
        factory: Arc<dyn NodeFactory>,
        output: OutputType,
        side: Option<(String, OutputType)>,
    },
    Sink {
        input: usize,
        factory: Arc<dyn NodeFactory>,
    },
    Union {
        inputs: Vec<usize>,
    },
    Partition {
        input: usize,
        partitioner: Partitioner,
    },
    SideOutput {
        input: usize,
        tag: String,
    },
}

impl Transformation {
    /// Whether `name`, `uid` and `set_parallelism` apply (virtual transformations have no operator).
    pub(crate) fn is_operator(&self) -> bool {
        matches!(
            self.kind,
            Kind::Source { .. } | Kind::Operator { .. } | Kind::Sink { .. }
        )
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
pub struct StreamNode {
    pub(crate) id: usize,
    pub(crate) name: String,
    pub(crate) uid: Option<String>,
    pub(crate) parallelism: u32,
    pub(crate) description: String,
    pub(crate) output_type: Option<&'static str>,
    pub(crate) factory: Arc<dyn NodeFactory>,
    /// The serializer of the node's main output (`T::Serializer` boxed), created at graph build.
    pub(crate) serializer: Option<Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for StreamNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamNode")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("uid", &self.uid)
            .field("parallelism", &self.parallelism)
            .field("operator", &self.description)
            .field("output_type", &self.output_type)
            .finish()
    }
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
}

/// An edge of the stream graph.
pub struct StreamEdge {
    pub(crate) source: usize,
    pub(crate) source_port: usize,
    pub(crate) target: usize,
    pub(crate) partitioner: PartitionerKind,
    pub(crate) key_type: Option<&'static str>,
    pub(crate) router: Option<Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for StreamEdge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamEdge")
            .field("source", &self.source)
            .field("source_port", &self.source_port)
            .field("target", &self.target)
            .field("partitioner", &self.partitioner)
            .field("key_type", &self.key_type)
            .finish()
    }
}

impl StreamEdge {
    /// The producing node.
    pub fn source(&self) -> usize {
        self.source
    }
    /// The producing node's output (0 is the main output, 1 the late-data side output).
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
#[derive(Debug)]
pub struct StreamGraph {
    pub(crate) nodes: Vec<StreamNode>,
    pub(crate) edges: Vec<StreamEdge>,
    pub(crate) max_parallelism: u32,
}

impl StreamGraph {
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
    /// The edges into `node`.
    pub(crate) fn inputs(&self, node: usize) -> Vec<&StreamEdge> {
        self.edges.iter().filter(|e| e.target == node).collect()
    }

    /// The plan in words: one line per operator, then its inputs.
    pub fn explain(&self) -> String {
        let mut s = format!(
            "Stream graph ({} operators, max parallelism {})\n",
            self.nodes.len(),
            self.max_parallelism
        );
        for n in &self.nodes {
            let _ = write!(s, "[{}] {} (parallelism {}", n.id, n.name, n.parallelism);
            if let Some(uid) = &n.uid {
                let _ = write!(s, ", uid \"{uid}\"");
            }
            let _ = writeln!(s, ")");
            let _ = writeln!(s, "    operator: {}", n.description);
            if let Some(t) = n.output_type {
                let _ = writeln!(s, "    output: {t}");
            }
            for e in self.inputs(n.id) {
                let port = if e.source_port == 1 {
                    " (late data)"
                } else {
                    ""
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

impl fmt::Display for StreamGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

/// A producer of a transformation's records: a node's output port, and the partitioner the
/// virtual transformations between it and the consumer asked for.
#[derive(Clone)]
struct Producer {
    node: usize,
    port: usize,
    partitioner: Partitioner,
}

/// Turns one kind of transformation into nodes and edges.
trait Translator {
    fn translate(&self, t: &Transformation, cx: &mut Translation<'_>) -> Result<Vec<Producer>>;
}

struct SourceTranslator;
struct OperatorTranslator;
struct SinkTranslator;
struct UnionTranslator;
struct PartitionTranslator;
struct SideOutputTranslator;

struct Translation<'a> {
    transformations: &'a [Transformation],
    config: &'a ExecutionConfig,
    done: HashMap<usize, Vec<Producer>>,
    nodes: Vec<StreamNode>,
    edges: Vec<StreamEdge>,
    /// The side-output tags of each node: tag -> port.
    side_tags: HashMap<usize, Vec<(String, usize)>>,
}

impl Translation<'_> {
    fn producers(&mut self, id: usize) -> Result<Vec<Producer>> {
        if let Some(p) = self.done.get(&id) {
            return Ok(p.clone());
        }
        let t = self
            .transformations
            .get(id)
            .ok_or_else(|| Error::Graph(format!("unknown transformation {id}")))?;
        let translator: &dyn Translator = match t.kind {
            Kind::Source { .. } => &SourceTranslator,
            Kind::Operator { .. } => &OperatorTranslator,
            Kind::Sink { .. } => &SinkTranslator,
            Kind::Union { .. } => &UnionTranslator,
            Kind::Partition { .. } => &PartitionTranslator,
            Kind::SideOutput { .. } => &SideOutputTranslator,
        };
        let producers = translator.translate(t, self)?;
        self.done.insert(id, producers.clone());
        Ok(producers)
    }

    fn parallelism(&self, t: &Transformation) -> Result<u32> {
        let p = t.parallelism.unwrap_or(self.config.parallelism);
        if p == 0 || p > self.config.max_parallelism() {
            return Err(Error::Config(format!(
                "operator `{}` has parallelism {p}; it must be between 1 and the max parallelism {}",
                t.name,
                self.config.max_parallelism()
            )));
        }
        Ok(p)
    }

    fn add_node(
        &mut self,
        t: &Transformation,
        factory: &Arc<dyn NodeFactory>,
        output: Option<OutputType>,
    ) -> Result<usize> {
        let serializer = match output {
            Some(o) => Some(
                (o.create)(&self.config.serializer_config).map_err(|source| Error::Type {
                    operator: t.name.clone(),
                    source,
                })?,
            ),
            None => None,
        };
        factory.validate().map_err(|e| match e {
            Error::Config(msg) => Error::Config(format!("operator `{}`: {msg}", t.name)),
            other => other,
        })?;
        let id = self.nodes.len();
        self.nodes.push(StreamNode {
            id,
            name: t.name.clone(),
            uid: t.uid.clone(),
            parallelism: self.parallelism(t)?,
            description: factory.describe(),
            output_type: output.map(|o| o.name),
            factory: Arc::clone(factory),
            serializer,
        });
        Ok(id)
    }

    fn connect(&mut self, input: usize, target: usize) -> Result<()> {
        for p in self.producers(input)? {
            let (kind, key_type, router) = match &p.partitioner {
                Partitioner::Default
                    if self.nodes[p.node].parallelism == self.nodes[target].parallelism =>
                {
                    (PartitionerKind::Forward, None, None)
                }
                Partitioner::Default | Partitioner::Rebalance => {
                    (PartitionerKind::Rebalance, None, None)
                }
                Partitioner::Broadcast => (PartitionerKind::Broadcast, None, None),
                Partitioner::Hash { key_type, router } => {
                    (key_type.create)(&self.config.serializer_config).map_err(|source| {
                        Error::Type {
                            operator: self.nodes[target].name.clone(),
                            source,
                        }
                    })?;
                    (
                        PartitionerKind::Hash,
                        Some(key_type.name),
                        Some(Arc::clone(router)),
                    )
                }
            };
            self.edges.push(StreamEdge {
                source: p.node,
                source_port: p.port,
                target,
                partitioner: kind,
                key_type,
                router,
            });
        }
        Ok(())
    }
}

impl Translator for SourceTranslator {
    fn translate(&self, t: &Transformation, cx: &mut Translation<'_>) -> Result<Vec<Producer>> {
        let Kind::Source { factory, output } = &t.kind else {
            unreachable!("dispatched by kind")
        };
        let node = cx.add_node(t, factory, Some(*output))?;
        Ok(vec![Producer {
            node,
            port: 0,
            partitioner: Partitioner::Default,
        }])
    }
}

impl Translator for OperatorTranslator {
    fn translate(&self, t: &Transformation, cx: &mut Translation<'_>) -> Result<Vec<Producer>> {
        let Kind::Operator {
            input,
            factory,
            output,
            side,
        } = &t.kind
        else {
            unreachable!("dispatched by kind")
        };
        // Inputs first, so that node ids are in topological order.
        cx.producers(*input)?;
        let node = cx.add_node(t, factory, Some(*output))?;
        cx.connect(*input, node)?;
        if let Some((tag, _)) = side {
            cx.side_tags.entry(node).or_default().push((tag.clone(), 1));
        }
        Ok(vec![Producer {
            node,
            port: 0,
            partitioner: Partitioner::Default,
        }])
    }
}

impl Translator for SinkTranslator {
    fn translate(&self, t: &Transformation, cx: &mut Translation<'_>) -> Result<Vec<Producer>> {
        let Kind::Sink { input, factory } = &t.kind else {
            unreachable!("dispatched by kind")
        };
        cx.producers(*input)?;
        let node = cx.add_node(t, factory, None)?;
        cx.connect(*input, node)?;
        Ok(Vec::new())
    }
}

impl Translator for UnionTranslator {
    fn translate(&self, t: &Transformation, cx: &mut Translation<'_>) -> Result<Vec<Producer>> {
        let Kind::Union { inputs } = &t.kind else {
            unreachable!("dispatched by kind")
        };
        let mut all = Vec::new();
        for &i in inputs {
            all.extend(cx.producers(i)?);
        }
        Ok(all)
    }
}

impl Translator for PartitionTranslator {
    fn translate(&self, t: &Transformation, cx: &mut Translation<'_>) -> Result<Vec<Producer>> {
        let Kind::Partition { input, partitioner } = &t.kind else {
            unreachable!("dispatched by kind")
        };
        Ok(cx
            .producers(*input)?
            .into_iter()
            .map(|p| Producer {
                partitioner: partitioner.clone(),
                ..p
            })
            .collect())
    }
}

impl Translator for SideOutputTranslator {
    fn translate(&self, t: &Transformation, cx: &mut Translation<'_>) -> Result<Vec<Producer>> {
        let Kind::SideOutput { input, tag } = &t.kind else {
            unreachable!("dispatched by kind")
        };
        let mut out = Vec::new();
        for p in cx.producers(*input)? {
            let port = cx
                .side_tags
                .get(&p.node)
                .and_then(|tags| tags.iter().find(|(t, _)| t == tag))
                .map(|(_, port)| *port);
            let port = port.ok_or_else(|| {
                Error::Graph(format!(
                    "no side output `{tag}` on `{}`",
                    cx.nodes[p.node].name
                ))
            })?;
            out.push(Producer {
                node: p.node,
                port,
                partitioner: Partitioner::Default,
            });
        }
        Ok(out)
    }
}

/// Translates the transformation list into the stream graph.
pub(crate) fn translate(
    transformations: &[Transformation],
    config: &ExecutionConfig,
) -> Result<StreamGraph> {
    config.validate()?;
    let mut cx = Translation {
        transformations,
        config,
        done: HashMap::new(),
        nodes: Vec::new(),
        edges: Vec::new(),
        side_tags: HashMap::new(),
    };
    // Every transformation is reachable from the list; sinks and dangling streams alike are
    // built (a stream nobody consumes still runs, as in Flink only sinks matter for output).
    for t in transformations {
        cx.producers(t.id)?;
    }
    let mut uids = HashMap::new();
    for n in &cx.nodes {
        if let Some(uid) = &n.uid {
            if let Some(other) = uids.insert(uid.clone(), n.name.clone()) {
                return Err(Error::Graph(format!(
                    "uid \"{uid}\" is used by both `{other}` and `{}`",
                    n.name
                )));
            }
        }
    }
    Ok(StreamGraph {
        nodes: cx.nodes,
        edges: cx.edges,
        max_parallelism: config.max_parallelism(),
    })
}

/// The factory of every node: a description and a build function.
pub(crate) struct OperatorFactory {
    pub(crate) description: String,
    pub(crate) output_dir: Option<std::path::PathBuf>,
    pub(crate) validate: Option<Box<dyn Fn() -> Result<()> + Send + Sync>>,
    #[allow(clippy::type_complexity)]
    pub(crate) build: Box<
        dyn for<'s> Fn(&mut BuildCtx<'s>, &StreamNode, &[&StreamEdge]) -> Result<()> + Send + Sync,
    >,
}

impl NodeFactory for OperatorFactory {
    fn describe(&self) -> String {
        self.description.clone()
    }
    fn validate(&self) -> Result<()> {
        self.validate.as_ref().map_or(Ok(()), |v| v())
    }
    fn output_dir(&self) -> Option<&std::path::Path> {
        self.output_dir.as_deref()
    }
    fn build<'s>(
        &self,
        ctx: &mut BuildCtx<'s>,
        node: &StreamNode,
        inputs: &[&StreamEdge],
    ) -> Result<()> {
        (self.build)(ctx, node, inputs)
    }
}
