//! What users implement, and the adapters that run it: sources and sinks, watermark
//! strategies, one- and two-input operators, process functions (keyed, co-, broadcast,
//! interval join) and aggregate functions.

pub(crate) mod broadcast;
pub mod functions;
pub(crate) mod interval_join;
pub(crate) mod keyed_process;
pub(crate) mod one_input;
pub mod sink;
pub mod source;
pub(crate) mod two_input;
pub mod watermark;
