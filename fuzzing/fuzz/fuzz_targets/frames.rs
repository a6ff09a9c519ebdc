//! Fuzz target `frames`: see `fuzzing::frames`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::frames(data));
