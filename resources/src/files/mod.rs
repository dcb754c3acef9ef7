//! The kinds that manage files and what is in them: `file`, `line`, `json:edit`, and the
//! archives (`gzip`, `tar`, and `deploy:tar` of the running program).

pub mod archive;
pub mod augeas;
pub mod deploy_tar;
pub mod file;
pub mod json_edit;
pub mod line;
