//! The kinds that manage files and what is in them: `file`, `line`, `json:edit`, and the
//! archives (`gzip`, `tar`).

pub mod archive;
pub mod file;
pub mod json_edit;
pub mod line;
