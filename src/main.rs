//! The `tend` command line.
fn main() {}
