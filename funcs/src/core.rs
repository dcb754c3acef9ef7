//! The core library, one module per mcl package.

use crate::registry::Registry;

/// Registers every core built-in and constant.
pub fn register_all(_r: &mut Registry) {}
