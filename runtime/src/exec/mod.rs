//! Execution: the typed builders compiled into a timely dataflow on every worker, the drivers
//! that run sources and operators, the edges between them, the checkpoint coordinator,
//! the run loop with its restarts, and the job's HTTP server (Prometheus and REST).

pub(crate) mod chain;
pub(crate) mod channel;
pub(crate) mod compile;
pub(crate) mod coordinator;
pub(crate) mod driver;
pub(crate) mod prometheus;
pub(crate) mod rest;
pub(crate) mod run;
pub(crate) mod server;
pub(crate) mod signal;
pub(crate) mod source_driver;
pub(crate) mod trim;
