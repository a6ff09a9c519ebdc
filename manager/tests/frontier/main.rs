//! Integration tests of the frontier: a temp RocksDB and a temp spool, time simulated
//! by passing wall-clock milliseconds. One test binary (RocksDB links once).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod support;

mod chaining;
mod connections;
mod durability;
mod failures;
mod loading;
mod requeue;
mod robots;
mod scheduling;
mod throttle;
