//! The kinds of the language itself: `print`, `msg`, `noop`, `test`, `value`, `timer`,
//! `exit` and `_panic`.

pub mod msg;
pub mod noop;
pub mod print;
pub mod test_res;
pub mod timer;
pub mod value;
