//! The operator contract the drivers run ([`contract::Operator`]), the records and watermarks
//! that reach it ([`element`]), its contexts and timers, and the built-in stateless operators.

pub(crate) mod builtin;
pub(crate) mod context;
pub(crate) mod contract;
pub(crate) mod element;
pub(crate) mod timer;
