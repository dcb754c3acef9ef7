//! The kinds that manage machines in clouds: `hetzner:vm` (the Hetzner Cloud API). Where
//! each cloud's API is reached is the host's ([`Endpoints`]): the public one, or what the
//! operator's environment names (`HCLOUD_ENDPOINT`, as Hetzner's own tools read it), or a
//! test's local server.

pub mod hetzner;

/// The base URLs of the cloud APIs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// Hetzner Cloud, up to and with `/v1`.
    pub hetzner: String,
}

impl Endpoints {
    /// The public APIs, or those the environment names.
    pub fn from_env() -> Endpoints {
        let hetzner = std::env::var("HCLOUD_ENDPOINT").ok().filter(|e| !e.is_empty());
        Endpoints { hetzner: hetzner.unwrap_or_else(|| hetzner::PUBLIC_API.to_string()) }
    }
}

impl Default for Endpoints {
    fn default() -> Endpoints {
        Endpoints { hetzner: hetzner::PUBLIC_API.to_string() }
    }
}
