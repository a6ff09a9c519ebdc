//! Integration tests of the frontier: a temp RocksDB and a temp spool, time simulated
//! by passing wall-clock milliseconds. One test binary (RocksDB links once).

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
