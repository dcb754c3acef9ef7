//! One module per subcommand.

pub mod check;
pub mod deploy;
pub mod graph;
pub mod run;
pub mod status;
pub mod why;
