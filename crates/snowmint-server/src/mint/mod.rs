//! Minting: the identity sources and the minter the routes mint from.

pub(crate) mod generator;
pub(crate) mod hostname;
pub(crate) mod lane;
pub(crate) mod minter;
