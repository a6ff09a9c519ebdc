//! websim DNS (being written).
