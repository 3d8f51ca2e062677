//! Parser throughput on the largest corpus file (filled in with the parser).
fn main() {}
