//! The API users build jobs with: the environment and the stream handles. Each call records
//! a transformation and its typed builder in the plan; nothing here runs a record. The
//! methods of one handle type live in one file.

pub(crate) mod broadcast;
pub(crate) mod connected;
pub(crate) mod datastream;
pub(crate) mod environment;
pub(crate) mod handles;
pub(crate) mod interval_join;
pub(crate) mod join;
pub(crate) mod keyed_stream;
pub(crate) mod node;
pub(crate) mod windowed_stream;
