//! The checks behind every fuzz target, in one place so that `tests/fuzz_regressions.rs` (stable,
//! `cargo test`) runs a saved input through exactly the code path the fuzzer found it on.

#![forbid(unsafe_code)]

pub mod checks;
