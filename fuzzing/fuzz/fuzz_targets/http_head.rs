//! Fuzz target `http_head`: see `fuzzing::http_head`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::http_head(data));
