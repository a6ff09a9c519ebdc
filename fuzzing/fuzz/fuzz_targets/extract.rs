//! Fuzz target `extract`: see `fuzzing::extract`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::extract(data));
