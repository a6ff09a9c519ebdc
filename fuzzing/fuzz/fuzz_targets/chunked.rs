//! Fuzz target `chunked`: see `fuzzing::chunked`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::chunked(data));
