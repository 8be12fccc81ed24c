//! The `snowmint` command.
fn main() {}
