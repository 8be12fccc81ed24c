//! Minting: the identity sources and the minter the routes mint from.

pub mod generator;
pub mod hostname;
pub mod identity;
pub mod minter;
