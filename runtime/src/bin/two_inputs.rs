//! Two-input operators under crashes: orders enriched with their customers (a keyed
//! co-process function), joined with their payments (an interval join) and checked against
//! broadcast rules (broadcast state), every result line written exactly once.
//!
//! ```text
//! cargo run --release -p typeinfo-runtime --bin two_inputs -- run --events N --output DIR \
//!   [--rate R] [--parallelism P] [--state heap|rocksdb] \
//!   [--checkpoint-dir DIR --checkpoint-interval-ms MS] [--restore PATH] \
//!   [--hosts H1,H2 --process I]
//! ```
//!
//! The inputs are functions of their index (no randomness), paced by the clock at `R` orders
//! and payments per second (the customers spread over the same time):
//!
//! - order `i`: customer `(i * 7919) % 50`, amount `(i * 37) % 1000 + 1`, event time
//!   `i * 100` ms;
//! - payment of order `i`: amount `order amount - i % 3`, event time `i * 100 + delay(i)`
//!   with `delay(i) = (i * 13) % 8` seconds (so some come too late for the join);
//! - customer `c` of 50: name `NAMES[c % 8]-c`;
//! - three rules (name, threshold), given up front by a bounded source.
//!
//! Output lines (text files, exactly once with checkpoints):
//!
//! - `enriched,ORDER,CUSTOMER,NAME,AMOUNT` for every order, once its customer is known
//!   (keyed co-process function: the order waits in keyed list state when it comes first);
//! - `paid,ORDER,AMOUNT,PAID,DELAY_MS` for every order with its payment within 0..=5 s of
//!   event time (interval join);
//! - `flag,ORDER,CUSTOMER,RULE` for every enriched order over a rule's threshold, whichever
//!   of the two came first (keyed broadcast process function; enriched orders are kept in
//!   keyed state and a rule visits them with `apply_to_keyed_state`).

use std::path::PathBuf;
use std::process::ExitCode;

mod support;
use std::sync::Arc;
use std::time::Instant;

use typeinfo::TypeInfo;
use typeinfo_runtime::{
    BroadcastContext, BroadcastStateDescriptor, CheckpointConfig, Cluster, Data, JoinContext,
    KeyedBroadcastProcessFunction, KeyedCoProcessFunction, KeyedContext, ReadOnlyContext,
    ReadStatus, RestoreSettings, Source, SourceOutput, SplitReader, StateBackend,
    StreamExecutionEnvironment, WatermarkStrategy,
};
use typeinfo_state::{
    KeyedStateBackend, ListState, ListStateDescriptor, ValueState, ValueStateDescriptor,
};

const CUSTOMERS: u64 = 50;
const NAMES: [&str; 8] = ["ada", "bob", "cy", "dee", "eve", "fay", "gus", "hal"];
const RULES: [(&str, i64); 3] = [("over-250", 250), ("over-500", 500), ("over-900", 900)];
/// The largest delay of a payment after its order, in event time.
const MAX_DELAY_MS: i64 = 7_000;

#[derive(TypeInfo, Clone, Debug)]
#[typeinfo(name = "two_inputs.Order")]
struct Order {
    id: u64,
    customer: u32,
    amount: i64,
    ts: i64,
}

#[derive(TypeInfo, Clone, Debug)]
#[typeinfo(name = "two_inputs.Payment")]
struct Payment {
    order: u64,
    amount: i64,
    ts: i64,
}

#[derive(TypeInfo, Clone, Debug)]
#[typeinfo(name = "two_inputs.Customer")]
struct Customer {
    id: u32,
    name: String,
}

#[derive(TypeInfo, Clone, Debug)]
#[typeinfo(name = "two_inputs.Enriched")]
struct Enriched {
    order: u64,
    customer: u32,
    name: String,
    amount: i64,
}

fn order(i: u64) -> Order {
    Order {
        id: i,
        customer: (i.wrapping_mul(7919) % CUSTOMERS) as u32,
        amount: (i.wrapping_mul(37) % 1000) as i64 + 1,
        ts: i as i64 * 100,
    }
}

fn payment(i: u64) -> Payment {
    let o = order(i);
    Payment {
        order: i,
        amount: o.amount - (i % 3) as i64,
        ts: o.ts + (i.wrapping_mul(13) % 8) as i64 * 1000,
    }
}

fn customer(c: u64) -> Customer {
    Customer {
        id: c as u32,
        name: format!("{}-{c}", NAMES[(c % NAMES.len() as u64) as usize]),
    }
}

/// `generate(0..count)`, paced by the clock at `per_second` (one split, its position the
/// next index), so that the job runs for a while and checkpoints land in between.
struct Paced<T> {
    count: u64,
    per_second: f64,
    generate: Arc<dyn Fn(u64) -> T + Send + Sync>,
}

struct PacedReader<T> {
    next: u64,
    from: u64,
    /// When the first read came (pacing counts from there, not from the reader's creation,
    /// so that a slow start does not make many records due at once).
    opened: Option<Instant>,
    count: u64,
    per_second: f64,
    generate: Arc<dyn Fn(u64) -> T + Send + Sync>,
}

impl<T: Data> SplitReader<T> for PacedReader<T> {
    type Position = u64;
    fn read(
        &mut self,
        out: &mut SourceOutput<'_, T>,
        budget: usize,
    ) -> typeinfo_runtime::Result<ReadStatus> {
        let opened = *self.opened.get_or_insert_with(Instant::now);
        let due = self.from + (opened.elapsed().as_secs_f64() * self.per_second) as u64;
        let mut n = 0;
        while n < budget && self.next < due.min(self.count) {
            out.collect((self.generate)(self.next));
            self.next += 1;
            n += 1;
        }
        Ok(if self.next >= self.count {
            ReadStatus::Finished
        } else if n == 0 {
            ReadStatus::NothingAvailable
        } else {
            ReadStatus::More
        })
    }
    fn position(&self) -> u64 {
        self.next
    }
    fn seek(&mut self, position: u64) -> typeinfo_runtime::Result<()> {
        self.next = position;
        self.from = position;
        self.opened = None;
        Ok(())
    }
}

impl<T: Data> Source<T> for Paced<T> {
    type Split = ();
    type Reader = PacedReader<T>;
    fn splits(&self, _: usize) -> typeinfo_runtime::Result<Vec<()>> {
        Ok(vec![()])
    }
    fn reader(&self, _: &()) -> typeinfo_runtime::Result<PacedReader<T>> {
        Ok(PacedReader {
            next: 0,
            from: 0,
            opened: None,
            count: self.count,
            per_second: self.per_second,
            generate: self.generate.clone(),
        })
    }
}

/// Orders enriched with their customer's name, whichever of the two arrives first.
#[derive(Clone, Default)]
struct Enrich {
    name: Option<ValueState<(), String>>,
    waiting: Option<ListState<(), Order>>,
}

fn missing() -> typeinfo_runtime::Error {
    typeinfo_runtime::Error::function("state used before open")
}

impl KeyedCoProcessFunction<u32, Customer, Order, Enriched> for Enrich {
    fn open(
        &mut self,
        state: &mut typeinfo_runtime::KeyedBackend<u32>,
    ) -> typeinfo_runtime::Result<()> {
        self.name = Some(state.value_state(&ValueStateDescriptor::new("name"))?);
        self.waiting = Some(state.list_state(&ListStateDescriptor::new("waiting"))?);
        Ok(())
    }

    /// A customer: remember the name, release the orders that waited for it.
    fn process_element1(
        &mut self,
        c: Customer,
        ctx: &mut KeyedContext<'_, u32, Enriched>,
    ) -> typeinfo_runtime::Result<()> {
        let (name, waiting) = (
            self.name.as_ref().ok_or_else(missing)?,
            self.waiting.as_ref().ok_or_else(missing)?,
        );
        name.update(ctx.state(), &(), c.name.clone())?;
        for o in waiting.get(ctx.state(), &())? {
            ctx.collect(Enriched {
                order: o.id,
                customer: c.id,
                name: c.name.clone(),
                amount: o.amount,
            });
        }
        waiting.clear(ctx.state(), &())?;
        Ok(())
    }

    /// An order: enrich it now, or keep it until its customer comes.
    fn process_element2(
        &mut self,
        o: Order,
        ctx: &mut KeyedContext<'_, u32, Enriched>,
    ) -> typeinfo_runtime::Result<()> {
        match self
            .name
            .as_ref()
            .ok_or_else(missing)?
            .value(ctx.state(), &())?
        {
            Some(name) => ctx.collect(Enriched {
                order: o.id,
                customer: o.customer,
                name,
                amount: o.amount,
            }),
            None => self
                .waiting
                .as_ref()
                .ok_or_else(missing)?
                .add(ctx.state(), &(), o)?,
        }
        Ok(())
    }
}

/// Flags each enriched order over each rule's threshold once, whichever comes first: the
/// orders are kept in keyed state, a new rule visits them all.
#[derive(Clone)]
struct Flag {
    rules: BroadcastStateDescriptor<String, i64>,
    seen: Option<ListState<(), (u64, i64)>>,
}

fn flag_line(order: u64, customer: u32, rule: &str) -> String {
    format!("flag,{order:06},{customer},{rule}")
}

impl KeyedBroadcastProcessFunction<u32, Enriched, (String, i64), String> for Flag {
    fn open(
        &mut self,
        state: &mut typeinfo_runtime::KeyedBackend<u32>,
    ) -> typeinfo_runtime::Result<()> {
        self.seen = Some(state.list_state(&ListStateDescriptor::new("seen"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        e: Enriched,
        ctx: &mut ReadOnlyContext<'_, u32, String>,
    ) -> typeinfo_runtime::Result<()> {
        let seen = self.seen.clone().ok_or_else(missing)?;
        seen.add(ctx.state()?, &(), (e.order, e.amount))?;
        let mut hits: Vec<String> = ctx
            .broadcast_state(&self.rules)?
            .entries()
            .filter(|(_, t)| e.amount > **t)
            .map(|(name, _)| name.clone())
            .collect();
        hits.sort();
        for rule in hits {
            ctx.collect(flag_line(e.order, e.customer, &rule));
        }
        Ok(())
    }

    fn process_broadcast_element(
        &mut self,
        rule: (String, i64),
        ctx: &mut BroadcastContext<'_, u32, String>,
    ) -> typeinfo_runtime::Result<()> {
        ctx.broadcast_state(&self.rules)?
            .put(rule.0.clone(), rule.1)?;
        let seen = self.seen.clone().ok_or_else(missing)?;
        let mut hits = Vec::new();
        ctx.apply_to_keyed_state(seen.id(), |customer, state| {
            for (order, amount) in seen.get(state, &())? {
                if amount > rule.1 {
                    hits.push(flag_line(order, *customer, &rule.0));
                }
            }
            Ok(())
        })?;
        for hit in hits {
            ctx.collect(hit);
        }
        Ok(())
    }
}

/// How one run is set up.
#[derive(Debug, Clone)]
struct Run {
    events: u64,
    rate: f64,
    output: PathBuf,
    parallelism: u32,
    state: StateBackend,
    checkpoints: Option<CheckpointConfig>,
    restore: Option<PathBuf>,
    cluster: Option<Cluster>,
}

fn paced<T: Data>(
    count: u64,
    per_second: f64,
    generate: impl Fn(u64) -> T + Send + Sync + 'static,
) -> Paced<T> {
    Paced {
        count,
        per_second,
        generate: Arc::new(generate),
    }
}

// Long: the job as a user writes it, read top to bottom (sources, operators, sink); split
// into functions, its dataflow would be spread over them.
fn run(r: &Run) -> typeinfo_runtime::Result<typeinfo_runtime::JobResult> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(r.parallelism)
        .set_max_parallelism(128)
        .set_state_backend(r.state.clone())
        .set_cluster(r.cluster.clone());
    if let Some(c) = &r.checkpoints {
        env.enable_checkpointing(c.clone());
    }
    if let Some(path) = &r.restore {
        env.restore_from(RestoreSettings {
            path: path.clone(),
            allow_non_restored_state: false,
        });
    }
    // The customers spread over the time the orders take.
    let customers_per_second = r.rate * CUSTOMERS as f64 / r.events.max(1) as f64;
    let orders = env
        .from_source(
            paced(r.events, r.rate, order),
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|o: &Order, _| o.ts),
            "orders",
        )
        .uid("orders")
        .set_parallelism(1);
    let payments = env
        .from_source(
            paced(r.events, r.rate, payment),
            WatermarkStrategy::for_bounded_out_of_orderness_millis(MAX_DELAY_MS)
                .with_timestamp_assigner(|p: &Payment, _| p.ts),
            "payments",
        )
        .uid("payments")
        .set_parallelism(1);
    let customers = env
        .from_source(
            paced(CUSTOMERS, customers_per_second, customer),
            WatermarkStrategy::no_watermarks(),
            "customers",
        )
        .uid("customers")
        .set_parallelism(1);
    let rules = env
        .from_collection(
            RULES
                .iter()
                .map(|(name, t)| ((*name).to_owned(), *t))
                .collect::<Vec<_>>(),
        )
        .uid("rules");

    let enriched = customers
        .connect(&orders)
        .key_by(|c: &Customer| c.id, |o: &Order| o.customer)
        .process(Enrich::default())
        .uid("enrich");

    let paid = orders
        .key_by(|o: &Order| o.id)
        .interval_join(&payments.key_by(|p: &Payment| p.order))
        .between(0, 5_000)
        .process(
            |o: &Order, p: &Payment, ctx: &mut JoinContext<'_, '_, u64, String>| {
                ctx.collect(format!(
                    "paid,{:06},{},{},{}",
                    o.id,
                    o.amount,
                    p.amount,
                    p.ts - o.ts
                ));
                Ok(())
            },
        )
        .uid("pay-join");

    let descriptor = BroadcastStateDescriptor::<String, i64>::new("rules");
    let flags = enriched
        .key_by(|e: &Enriched| e.customer)
        .connect(&rules.broadcast_with(&[&descriptor]))
        .process(Flag {
            rules: descriptor.clone(),
            seen: None,
        })
        .uid("flag");

    let enriched_lines = enriched
        .map(|e: Enriched| {
            format!(
                "enriched,{:06},{},{},{}",
                e.order, e.customer, e.name, e.amount
            )
        })
        .uid("enriched-lines");
    enriched_lines
        .union(&[paid, flags])
        .write_as_text(&r.output)
        .uid("output");
    env.execute("two inputs")
}

/// Two-input operators under crashes (co-process, interval join, broadcast state).
#[derive(clap::Parser)]
#[command(name = "two_inputs", about, long_about = None)]
enum Cli {
    /// Runs the job.
    Run(RunArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Orders (and payments) to generate.
    #[arg(long)]
    events: u64,
    /// Orders and payments per second.
    #[arg(long, default_value_t = 1_000_000)]
    rate: u64,
    /// The exactly-once text file sink's directory.
    #[arg(long)]
    output: PathBuf,
    /// Parallelism of every operator.
    #[arg(long, default_value_t = 1)]
    parallelism: u32,
    #[command(flatten)]
    state: support::StateArgs,
    #[command(flatten)]
    cluster: support::ClusterArgs,
}

impl RunArgs {
    fn into_run(self) -> Result<Run, String> {
        Ok(Run {
            events: self.events,
            rate: self.rate as f64,
            output: self.output,
            parallelism: self.parallelism,
            checkpoints: self.state.checkpoints(),
            restore: self.state.restore.clone(),
            state: self.state.state,
            cluster: self.cluster.cluster()?,
        })
    }
}

fn main() -> ExitCode {
    let Cli::Run(args) = <Cli as clap::Parser>::parse();
    let result = args
        .into_run()
        .and_then(|r| run(&r).map(|_| ()).map_err(|e| e.to_string()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("two_inputs: {e}");
            ExitCode::FAILURE
        }
    }
}
