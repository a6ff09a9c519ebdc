//! The control protocol (being written).
