//! Fuzz target `warc`: see `fuzzing::warc`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::warc(data));
