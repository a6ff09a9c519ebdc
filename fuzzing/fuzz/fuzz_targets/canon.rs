//! Fuzz target `canon`: see `fuzzing::canon`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::canon(data));
