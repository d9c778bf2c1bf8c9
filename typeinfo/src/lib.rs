//! typeinfo
