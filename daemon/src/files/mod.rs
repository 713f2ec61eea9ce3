//! What is on disk: walking a project with ignore rules ([`scan`]), languages and skip rules
//! by file name ([`lang`]), and what is never indexed or served ([`secrets`]).

pub mod lang;
pub mod scan;
pub mod secrets;
