//! Shared support for the integration tests in `tests/tests/`: finding the
//! `polycrawl` binary, starting processes that are killed when the test ends
//! (even on failure), and temporary directories.
