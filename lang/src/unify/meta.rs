//! The meta parameters every resource accepts (spec 3.5.4), as types.

use crate::types::Type;

/// Every meta parameter with its mcl type, in the order of the whole-`Meta` struct.
pub const META_PARAMS: [(&str, MetaKind); 18] = [
    ("noop", MetaKind::Bool),
    ("retry", MetaKind::Int),
    ("retryreset", MetaKind::Bool),
    ("delay", MetaKind::Int),
    ("timeout", MetaKind::Int),
    ("poll", MetaKind::Int),
    ("limit", MetaKind::Float),
    ("burst", MetaKind::Int),
    ("reset", MetaKind::Bool),
    ("sema", MetaKind::StrList),
    ("rewatch", MetaKind::Bool),
    ("realize", MetaKind::Bool),
    ("dollar", MetaKind::Bool),
    ("hidden", MetaKind::Bool),
    ("export", MetaKind::StrList),
    ("reverse", MetaKind::Bool),
    ("autoedge", MetaKind::Bool),
    ("autogroup", MetaKind::Bool),
];

/// The mcl type of one meta parameter (kept `const`-friendly, unlike [`Type`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaKind {
    Bool,
    Int,
    Float,
    StrList,
}

impl MetaKind {
    pub fn ty(self) -> Type {
        match self {
            MetaKind::Bool => Type::Bool,
            MetaKind::Int => Type::Int,
            MetaKind::Float => Type::Float,
            MetaKind::StrList => Type::list(Type::Str),
        }
    }
}

/// Meta parameters tend adds to mgmt's: set one by one only (`Meta:tags`), so the whole
/// `Meta => struct{…}` keeps mgmt's exact type.
pub const EXTRA_META_PARAMS: [(&str, MetaKind); 1] = [
    // Puppet's tags, which collectors query (`tag == "web"`).
    ("tags", MetaKind::StrList),
];

/// The type of `Meta:name`, `None` for an unknown name.
pub fn meta_param_type(name: &str) -> Option<Type> {
    META_PARAMS.iter().chain(&EXTRA_META_PARAMS).find(|(n, _)| *n == name).map(|(_, k)| k.ty())
}

/// The exact type a whole `Meta => expr` struct must have.
pub fn meta_struct_type() -> Type {
    Type::Struct(META_PARAMS.iter().map(|(n, k)| (n.to_string(), k.ty())).collect())
}
