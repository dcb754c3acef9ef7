//! The kinds that manage the system through its tools: accounts (`user`, `group`), `cron`,
//! `hostname`, `mount`, `sysctl`, `pkg`, `ssh:authorized_key`, `gsettings` and `password`.

pub mod account;
pub mod cron;
pub mod gsettings;
pub mod hostname;
pub mod mount;
pub mod password;
pub mod pkg;
pub mod ssh_key;
pub mod sysctl;
