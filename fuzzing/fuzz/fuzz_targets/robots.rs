//! Fuzz target `robots`: see `fuzzing::robots`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::robots(data));
