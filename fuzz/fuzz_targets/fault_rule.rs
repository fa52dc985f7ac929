#![no_main]
// The check and its invariants: fuzz/src/checks/ (also run by tests/fuzz_regressions.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| mongotape_fuzz::checks::fault_rule(data));
