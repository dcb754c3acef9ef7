//! funcs
