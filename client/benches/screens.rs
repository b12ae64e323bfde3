//! Criterion benchmark: parse + classify the real-dump-sized fixtures (filled in below).
fn main() {}
