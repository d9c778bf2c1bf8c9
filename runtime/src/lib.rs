//! The typeinfo runtime: a DataStream API, keyed event-time windows, watermarks,
//! checkpoints and savepoints on timely dataflow.
//!
//! Not built yet: this crate is the home of the runtime issue. It holds no code so that no
//! one mistakes a placeholder for the real engine.
