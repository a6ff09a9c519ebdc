//! websim TLS (being written).
