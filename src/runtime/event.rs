//! Typed internal events, as in Vector: something that happened inside a component and that an
//! operator may need to see is a value of its own type, and emitting it writes its log line and
//! updates its metrics in one place. A failure can then never be logged without being counted,
//! or counted without being logged, and the wording and level live next to the counter.

/// An event a component emits: [`InternalEvent::emit`] logs it and counts it.
pub trait InternalEvent {
    fn emit(self);
}

/// Emits `event`; the spelling call sites use (`emit(ProfileRejected { .. })`).
pub fn emit(event: impl InternalEvent) {
    event.emit();
}
