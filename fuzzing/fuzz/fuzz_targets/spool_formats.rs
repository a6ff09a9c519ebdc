//! Fuzz target `spool_formats`: see `fuzzing::spool_formats`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::spool_formats(data));
