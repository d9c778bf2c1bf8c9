//! Windows, as Flink's `WindowOperator` has them: windows and assigners, triggers, evictors,
//! window functions, and the operator that runs them over keyed state.

pub mod assigner;
pub mod evictor;
pub(crate) mod function;
pub(crate) mod operator;
pub mod trigger;
pub mod window;
