//! Parley's background work. Every task here watches one shutdown token and
//! is tracked by the caller's `TaskTracker`, so a stopping process lets each
//! finish its current step (an in-flight webhook attempt included) before
//! the database closes.

pub mod feed;
pub mod mail;
mod outbound;
pub mod sweeper;
pub mod webhooks;

pub mod push;
