//! The processes of a multi-process job: connecting them, and the authenticated handshake
//! every connection passes before timely carries a batch over it.

pub(crate) mod cluster;
pub mod handshake;
