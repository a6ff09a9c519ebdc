//! Integration tests of the manager service: a real manager (`manager::run` on
//! 127.0.0.1:0, temp state and spool) and test-side downloaders, resolvers,
//! applications and admin tools speaking the real control protocol. One test
//! binary (RocksDB links once).
#![allow(clippy::unwrap_used)] // a test may unwrap: a panic is how it fails

mod support;

mod admin;
mod crawl;
mod failover;
mod restart;
mod sync;
mod web;
