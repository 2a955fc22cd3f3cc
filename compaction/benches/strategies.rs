//! Placeholder, replaced by the strategies benchmark.
fn main() {}
