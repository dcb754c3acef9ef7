//! The two backends of `engine::world::World`: [`local::LocalWorld`], the store under the
//! state directory that one host keeps to itself, and [`etcd::EtcdWorld`], an etcd cluster
//! that every host of a fleet shares (`tend run --seeds`).

pub mod etcd;
pub mod local;

pub use local::LocalWorld;

/// The machine's host name (the world's default name for this host).
pub fn machine_hostname() -> String {
    nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default()
}
