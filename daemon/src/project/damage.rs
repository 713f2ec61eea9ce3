//! Damage a read of a loaded project runs into (see `IndexError::is_damage`): noted here,
//! so the registry reopens the project, setting its index aside and rebuilding it.

use super::Project;
use crate::error::Error;

impl Project {
    /// Damage a read of this project ran into, if any (see [`crate::error::IndexError::is_damage`]).
    pub fn damage(&self) -> Option<String> {
        self.damage
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `result`, remembering the damage it reports (the registry then reopens the project).
    pub(super) fn noting<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(Error::Index(e)) = &result
            && e.is_damage()
        {
            tracing::error!(root = %self.root.display(), error = %e, "a read found the index damaged");
            *self.damage.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
        }
        result
    }
}
