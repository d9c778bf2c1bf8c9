//! Golden-file compatibility tests live in `tests/`; fixtures in `fixtures/`.
