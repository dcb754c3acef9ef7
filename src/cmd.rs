//! One module per subcommand.

pub mod check;
pub mod graph;
pub mod run;
pub mod why;
