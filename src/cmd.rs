//! One module per subcommand.

pub mod check;
pub mod graph;
pub mod why;
