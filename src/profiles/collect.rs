//! A receiver for unit tests that keeps every profile appended to it.

use std::sync::{Arc, Mutex, MutexGuard};

use super::{Appendable, Profile, Receiver};
use crate::syntax::types::CapsuleRef;

#[derive(Default)]
pub struct Collect(Mutex<Vec<Profile>>);

impl Appendable for Arc<Collect> {
    fn append(&self, profiles: Vec<Profile>) {
        self.got().extend(profiles);
    }
}

impl Collect {
    /// A collector and the receiver capsule that feeds it.
    pub fn receiver() -> (Arc<Collect>, CapsuleRef<Receiver>) {
        let c = Arc::new(Collect::default());
        let r = CapsuleRef(Arc::new(Receiver::new(c.clone())));
        (c, r)
    }

    /// What was appended so far.
    pub fn got(&self) -> MutexGuard<'_, Vec<Profile>> {
        crate::sync::lock(&self.0)
    }

    /// Takes what was appended so far.
    pub fn take(&self) -> Vec<Profile> {
        std::mem::take(&mut *self.got())
    }
}
