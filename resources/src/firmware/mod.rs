//! The kinds that reach below the operating system: firmware settings (`fwattr`) through
//! the kernel's firmware-attributes interface, and a machine's BMC (`bmc:power`) over
//! Redfish ([`redfish`]).

pub mod bmc;
pub mod fwattr;
pub mod redfish;
