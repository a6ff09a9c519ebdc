//! Fuzz target `sitemap`: see `fuzzing::sitemap`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::sitemap(data));
