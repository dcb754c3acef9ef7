//! The kinds that reach below the operating system: firmware settings (`fwattr`) through
//! the kernel's firmware-attributes interface, device firmware through the fwupd daemon
//! (`fwupd:device`, `fwupd:remote`, `fwupd:system`), and a machine's BMC (`bmc:power`,
//! `bmc:firmware`) over Redfish ([`redfish`]).

pub mod bmc;
pub mod bmc_firmware;
pub mod fwattr;
pub mod fwupd;
pub mod redfish;
