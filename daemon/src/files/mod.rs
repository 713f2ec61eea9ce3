//! What is on disk: walking a project with ignore rules ([`scan`]), opening a file to read
//! without following symlinks or reading special files ([`open`]), languages and skip rules
//! by file name ([`lang`]), and what is never indexed or served ([`secrets`]).

pub mod lang;
pub mod open;
pub mod scan;
pub mod secrets;
